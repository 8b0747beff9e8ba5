// The operator's side: install, upgrade, uninstall, status and verify as pure plans over facts probed from the host.
export { applyPlan } from './apply.ts';
export { sessionLimitReport } from './cgroup-limits.ts';
export { budgetReport } from './budget-report.ts';
export { landlockReport } from './landlock.ts';
export { probeCgroups, type CgroupFacts } from './cgroups.ts';
export { describeStep, planInstall, type Bundle, type Plan } from './install-plan.ts';
export { DEFAULT_CLIENT_UNIT, DEFAULT_LAYOUT, DEFAULT_SOCKET_GROUP, paths, SESSIONS_SLICE, type Layout } from './layout.ts';
export { parseManifest } from './manifest.ts';
export { dirChain, existingState, fileFacts, hostFacts, liveSessions, localAccounts, nodeFacts, readRecord } from './probe.ts';
export { checkAgentGroups } from './agent-groups.ts';
export { formatStatus, gatherStatus } from './status.ts';
export { runCommand, type Runner } from './system.ts';
export { planUninstall } from './uninstall-plan.ts';
export { listFiles, readManifestAt, verifyDifferences } from './verify.ts';
export { packageDirProblems } from './requirements.ts';

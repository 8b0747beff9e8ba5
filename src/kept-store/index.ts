// What root keeps of a kept session so that it outlives the supervisor: its rendezvous socket and record,
// and the end of one that ended with nobody attached.
export { KEPT_DIR, KeptStore, type RemoveFailed } from './store.ts';
export { supervisorCgroup } from './supervisor-cgroup.ts';
export { RECORD_FORMAT, adoptionDeadline, boundKeep, parseRecord, type KeptRecord } from './record.ts';
export { ENDED_FORMAT, boundEnded, checkEnded, endedExpired, endedRecordOf, parseEnded, type EndedRecord } from './ended-record.ts';

// Protocol version 2's end record (docs/protocol.md "EXIT and STOPPED, version 2"): the unit's figures
// (the helper's reading of its cgroup, else systemd's) and what crossed the connection as the session
// helper counted it. A figure nobody could measure is null (sent as 2^64-1), never 0. Pure.
import type { Accounting } from '../protocol/index.ts';
import type { EndReport } from '../control/index.ts';
import type { SessionFigures } from './accounting.ts';

/** The wire carries figures up to 2^53 (a decoder refuses more); beyond that a figure is unavailable. */
function figure(value: bigint | undefined): number | null {
  return value === undefined || value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(value);
}

export function endRecord(figures: SessionFigures, report: EndReport | undefined, durationUsec: bigint | undefined): Accounting {
  return {
    cpuUsageNsec: figure(figures.CPU_USAGE_NSEC),
    // MemoryPeak where there is one (the cgroup's memory.peak, or systemd 255 on), else MemoryCurrent at the end.
    memoryBytes: figure(figures.MEMORY_PEAK_BYTES ?? figures.MEMORY_CURRENT_BYTES),
    ioReadBytes: figure(figures.IO_READ_BYTES),
    ioWriteBytes: figure(figures.IO_WRITE_BYTES),
    tasks: figure(figures.TASKS_CURRENT),
    inputBytes: figure(report?.bytesIn),
    outputBytes: figure(report?.bytesOut),
    durationUsec: figure(durationUsec),
  };
}

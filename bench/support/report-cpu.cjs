/**
 * Preload for `bench/support/measure.mjs` (`node --require <this file> …`): when the process exits,
 * write its own CPU time to the file named by BENCH_CPU_REPORT_FILE, as one JSON line
 * `{ "selfUs": user+system µs of this process (every thread: main, GC helpers, libuv pool) from
 * getrusage(RUSAGE_SELF), "childrenTicks": cutime+cstime of /proc/self/stat, the CPU of this
 * process's own children it waited for, in clock ticks }`.
 *
 * Nothing is written when the process dies of a signal (no `exit` event); the harness then falls
 * back to its own, coarser measure. The cost of this file is paid by every node variant alike.
 */
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');

const target = process.env.BENCH_CPU_REPORT_FILE;
if (target) {
  // Not inherited by grandchildren: their CPU reaches us through childrenTicks instead.
  delete process.env.BENCH_CPU_REPORT_FILE;
  process.on('exit', () => {
    const usage = process.resourceUsage();
    let childrenTicks = 0;
    try {
      const stat = readFileSync('/proc/self/stat', 'utf8');
      // Fields after the command name, which may hold spaces: state is field 3, cutime 16, cstime 17.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      childrenTicks = Number(fields[13]) + Number(fields[14]);
    } catch {
      // not Linux: children's CPU is not counted
    }
    writeFileSync(target, JSON.stringify({ selfUs: usage.userCPUTime + usage.systemCPUTime, childrenTicks }));
  });
}

#!/usr/bin/env node
// The executable behind `flower`: kept separate from main.ts so importing the CLI in tests never runs it.
import { writeErr } from '../output/sink.js';
import { main } from './main.js';
import { endQuietlyWhenOutputCloses } from './terminal/closed-output.js';

endQuietlyWhenOutputCloses();

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    writeErr(`flower: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);

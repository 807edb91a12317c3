import { runCli } from './program.js';
import { endQuietlyOnClosedPipe } from './output.js';

endQuietlyOnClosedPipe();
process.exitCode = await runCli(process.argv);

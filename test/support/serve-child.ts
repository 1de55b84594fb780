import { loadFunctionHandlers, startLocalServer } from '../../commands/local/server.ts';
import { inProcess } from './in-process.ts';

/**
 * The local server in a process of its own, so a test can read everything the functions write
 * to stdout and stderr. Configured by the environment as on Lambda (TABLE_NAME, DYNAMODB_ENDPOINT,
 * LOG_LEVEL); says where it listens on stderr, and stops on SIGTERM.
 */
const server = await startLocalServer({ functions: inProcess(await loadFunctionHandlers()) });
process.stderr.write(`LISTENING ${server.url}\n`);
process.once('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});

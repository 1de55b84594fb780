import { startLocalServer, loadFunctionHandlers, type LocalServer } from '../../scripts/lib/local-server.ts';
import type { TestTable } from './dynamodb.ts';

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body (undefined when empty). */
  body: any;
}

export interface TestApi {
  server: LocalServer;
  get(path: string, options?: { token?: string; headers?: Record<string, string>; method?: string }): Promise<ApiResponse>;
  close(): Promise<void>;
}

/**
 * The real functions behind the local server, against a test table. The functions read their
 * configuration from the environment once, so a test file serves one table.
 */
export async function startApi(table: TestTable, env: Record<string, string> = {}): Promise<TestApi> {
  Object.assign(process.env, { TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint, LOG_LEVEL: 'silent', ...env });
  const server = await startLocalServer({ handlers: await loadFunctionHandlers() });
  return {
    server,
    async get(path, options = {}) {
      const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
      if (options.token !== undefined) headers.Authorization = `Bearer ${options.token}`;
      const response = await fetch(server.url + path, { method: options.method ?? 'GET', headers });
      const text = await response.text();
      return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : undefined };
    },
    close: () => server.close(),
  };
}

import { request } from 'node:http';
import { startLocalServer, loadFunctionHandlers, type LocalServer } from '../../commands/local/server.ts';
import { inProcess } from './in-process.ts';
import type { TestTable } from './dynamodb.ts';
import { checkAgainstOpenApi } from './openapi-check.ts';

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body (undefined when empty). */
  body: any;
}

export interface TestApi {
  server: LocalServer;
  get(
    path: string,
    options?: { token?: string; headers?: Record<string, string>; method?: string },
  ): Promise<ApiResponse>;
  close(): Promise<void>;
}

/**
 * The real functions behind the local server, against a test table. The functions read their
 * configuration from the environment once, so a test file serves one table.
 */
export async function startApi(table: TestTable, env: Record<string, string> = {}): Promise<TestApi> {
  Object.assign(process.env, {
    TABLE_NAME: table.tableName,
    DYNAMODB_ENDPOINT: table.endpoint,
    LOG_LEVEL: 'silent',
    ...env,
  });
  const server = await startLocalServer({ functions: inProcess(await loadFunctionHandlers()) });
  return {
    server,
    async get(path, options = {}) {
      const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
      if (options.token !== undefined) headers.Authorization = `Bearer ${options.token}`;
      const method = options.method ?? 'GET';
      const response = await send(server.url + path, method, headers);
      // Every response a test receives must be one the API document describes.
      checkAgainstOpenApi(method, path, response.status, response.text);
      return response;
    },
    close: () => server.close(),
  };
}

/** node:http rather than fetch: it sends Host and other headers exactly as given. */
function send(url: string, method: string, headers: Record<string, string>): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        resolve({
          status: res.statusCode ?? 0,
          headers: responseHeaders,
          text,
          body: text ? JSON.parse(text) : undefined,
        });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

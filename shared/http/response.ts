import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { elapsedMs } from '../clock.ts';

/** Every response is JSON, errors included, whatever the Accept header says. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export function jsonResponse(
  statusCode: number,
  body: string,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode,
    headers: { 'Content-Type': JSON_CONTENT_TYPE, ...headers },
    body,
  };
}

/** `served_in`: milliseconds since the request started, at most 2 decimals. */
export function servedIn(startedAt: number): string {
  return `${elapsedMs(startedAt)}ms`;
}

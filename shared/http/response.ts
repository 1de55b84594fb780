import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

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

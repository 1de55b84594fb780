import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

type Result = APIGatewayProxyStructuredResultV2;
type Request = { event: APIGatewayProxyEventV2 | null | undefined; response?: Result | null };

/**
 * HEAD answers exactly as GET would, without a body (RFC 9110 9.3.2; docs/contract.md, section 1): the same
 * status and headers, the ETag included, for a 200, a 304 and every error alike. The request runs
 * as a GET; only the body is dropped at the end, once the handler has tagged its answer and the
 * error handler has written its body. Content-Length is left out, as RFC 9110 allows and as for a
 * 304: the function never sets one, and the local server sends none on a HEAD.
 */
export function headWithoutBody(): MiddlewareObj<APIGatewayProxyEventV2, Result> {
  const dropHeadBody = (request: Request) => {
    if (request.response && request.event?.requestContext?.http?.method === 'HEAD') {
      const { body: _body, ...rest } = request.response;
      request.response = rest;
    }
  };
  return { after: dropHeadBody, onError: dropHeadBody };
}

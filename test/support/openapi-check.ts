import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * Checks a response against the committed openapi.json: the operation must describe its status,
 * and its body must match the schema the document gives (a 304, and any answer to HEAD, must
 * have none). A response the document does not describe fails the test that received it.
 */
const document = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }> }>
  >;
  components: { schemas: Record<string, object> };
};

const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false });
// The schemas refer to each other (`#/components/schemas/Project` inside ProjectsPage): ajv
// resolves those within the document's components, added under the document's name.
const DOCUMENT_ID = 'openapi.json';
ajv.addSchema({ components: document.components }, DOCUMENT_ID);
const validators = new Map<string, ValidateFunction>();
function validatorFor(schema: { $ref?: string }): ValidateFunction {
  const key = schema.$ref ?? JSON.stringify(schema);
  let validate = validators.get(key);
  if (!validate) {
    if (schema.$ref && !document.components.schemas[schema.$ref.split('/').pop()!])
      throw new Error(`openapi.json has no schema ${schema.$ref}`);
    validate = ajv.compile(schema.$ref ? { $ref: `${DOCUMENT_ID}${schema.$ref}` } : schema);
    validators.set(key, validate);
  }
  return validate;
}

function operationPath(path: string): string | undefined {
  const segments = path.split('?')[0]!.split('/');
  return Object.keys(document.paths).find((template) => {
    const parts = template.split('/');
    return (
      parts.length === segments.length &&
      parts.every((part, i) => (/^\{.+\}$/.test(part) ? segments[i]!.length > 0 : part === segments[i]))
    );
  });
}

export function checkAgainstOpenApi(method: string, path: string, status: number, text: string): void {
  const template = operationPath(path);
  const operation = template ? document.paths[template]![method.toLowerCase()] : undefined;
  // Any other path or method is API Gateway's own 404, as the document's description says (to a HEAD, without its body).
  const routingNotFound =
    method === 'HEAD' ? {} : { content: { 'application/json': { schema: { $ref: '#/components/schemas/NotFound' } } } };
  const described = operation ? operation.responses[String(status)] : status === 404 ? routingNotFound : undefined;
  if (!described) throw new Error(`openapi.json does not describe ${status} for ${method} ${template ?? path}`);
  const schema = described.content?.['application/json']?.schema;
  if (!schema) {
    if (text !== '')
      throw new Error(
        `openapi.json describes no body for ${status} on ${method} ${template}, but one came: ${text.slice(0, 200)}`,
      );
    return;
  }
  const validate = validatorFor(schema);
  if (!validate(JSON.parse(text))) {
    throw new Error(
      `${status} of ${method} ${path} does not match openapi.json: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 500)}`,
    );
  }
}

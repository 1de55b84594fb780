import { CfnOutput, type Stack } from 'aws-cdk-lib';
import { DomainName } from 'aws-cdk-lib/aws-apigatewayv2';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';

/**
 * A custom domain for the API, with an ACM certificate of the same region, and the API mapping's
 * path (`v1`, or `orders/v1`; none: the domain's root).
 */
export interface CustomDomainProps {
  domainName: string;
  certificateArn: string;
  basePath?: string;
}

/**
 * The base of `links` and `meta.path` behind the domain. The request cannot tell it: AWS documents
 * that payload 2.0's rawPath leaves the API mapping's path out ("If you use an API mapping to
 * connect your stage to a custom domain name, rawPath won't provide the API mapping value":
 * "Create AWS Lambda proxy integrations for HTTP APIs",
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
 */
export function domainBaseUrl(domain: CustomDomainProps): string {
  return `https://${domain.domainName}${domain.basePath ? `/${domain.basePath}` : ''}`;
}

/** The domain name API Gateway serves, and the output saying where its CNAME points. */
export function customDomainName(stack: Stack, domain: CustomDomainProps): DomainName {
  const domainName = new DomainName(stack, 'DomainName', {
    domainName: domain.domainName,
    certificate: Certificate.fromCertificateArn(stack, 'Certificate', domain.certificateArn),
  });
  new CfnOutput(stack, 'CustomDomainTarget', {
    description: "Where the custom domain's CNAME points",
    value: domainName.regionalDomainName,
  });
  return domainName;
}

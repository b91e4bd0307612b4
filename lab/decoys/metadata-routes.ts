/**
 * What the fake cloud metadata service answers: a pure function from request to reply,
 * so the route table is testable without sockets. The decoy is a *careless* cloud: it
 * answers IMDSv1 as well as IMDSv2, accepts any session token, and hands out canary
 * credentials to anyone who asks with the right path and header.
 */

export interface MetadataCanaries {
  accessKeyId: string;
  secretAccessKey: string;
  /** Session token for AWS/Alibaba, access token for GCP/Azure. */
  token: string;
  /** The IMDSv2 session token handed out by `PUT /latest/api/token`. */
  imdsToken: string;
}

export interface MetadataContext {
  canaries: MetadataCanaries;
  roleName: string;
  now?: Date;
}

export type MetadataProvider = 'aws' | 'alibaba' | 'gcp' | 'azure' | 'none';

export interface MetadataRequest {
  method: string;
  /** URL path without the query string. */
  path: string;
  /** Header names in lower case (as node:http gives them). */
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

export interface MetadataReply {
  status: number;
  headers: Record<string, string>;
  body: string;
  provider: MetadataProvider;
  /** A stable name for what was asked, e.g. `aws-credentials`; `not-found` for unknown paths. */
  route: string;
  /** Whether the request presented the IMDSv2 session token: `valid`, `invalid` or `absent`. */
  imdsToken: 'valid' | 'invalid' | 'absent';
}

const IMDS_TTL_HEADERS = {
  aws: 'x-aws-ec2-metadata-token-ttl-seconds',
  alibaba: 'x-aliyun-ecs-metadata-token-ttl-seconds',
} as const;
const IMDS_TOKEN_HEADERS = ['x-aws-ec2-metadata-token', 'x-aliyun-ecs-metadata-token'] as const;
const IMDS_MAX_TTL_SECONDS = 21_600;

const TEXT = { 'content-type': 'text/plain' };
const JSON_TYPE = { 'content-type': 'application/json' };
const GOOGLE = { 'metadata-flavor': 'Google' };

export function headerValue(headers: Readonly<Record<string, string | string[] | undefined>>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function routeMetadata(req: MetadataRequest, ctx: MetadataContext): MetadataReply {
  const imdsToken = presentedImdsToken(req, ctx.canaries.imdsToken);
  const partial = routeByPrefix(req, ctx);
  return { ...partial, imdsToken };
}

type PartialReply = Omit<MetadataReply, 'imdsToken'>;

function routeByPrefix(req: MetadataRequest, ctx: MetadataContext): PartialReply {
  const path = req.path;
  if (path === '/latest/api/token') return imdsTokenRoute(req, ctx);
  if (path.startsWith('/computeMetadata/v1')) return gcpRoute(req, ctx);
  if (path.startsWith('/metadata/')) return azureRoute(req, ctx);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return { status: 405, headers: TEXT, body: 'Method Not Allowed\n', provider: 'none', route: 'method-not-allowed' };
  }
  if (path === '/' || path === '') {
    return text(200, 'latest\ncomputeMetadata/\nmetadata/\n', 'none', 'root');
  }
  if (path === '/latest' || path === '/latest/') return text(200, 'dynamic\nmeta-data\nuser-data', 'aws', 'aws-latest');
  if (path === '/latest/meta-data/ram' || path.startsWith('/latest/meta-data/ram/')) {
    return alibabaRoute(path.slice('/latest/meta-data/ram'.length).replace(/^\/+/, ''), ctx);
  }
  if (path.startsWith('/latest/')) return awsRoute(path.slice('/latest/'.length), ctx);
  return notFound();
}

function imdsTokenRoute(req: MetadataRequest, ctx: MetadataContext): PartialReply {
  const provider = headerValue(req.headers, IMDS_TTL_HEADERS.alibaba) !== undefined ? 'alibaba' : 'aws';
  if (req.method !== 'PUT') {
    return { status: 405, headers: TEXT, body: 'Method Not Allowed\n', provider, route: 'imds-token-wrong-method' };
  }
  const ttlText = headerValue(req.headers, IMDS_TTL_HEADERS[provider]);
  const ttl = ttlText !== undefined && /^\d{1,6}$/.test(ttlText.trim()) ? Number(ttlText.trim()) : Number.NaN;
  if (!(ttl >= 1 && ttl <= IMDS_MAX_TTL_SECONDS)) {
    return { status: 400, headers: TEXT, body: 'Bad Request\n', provider, route: 'imds-token-bad-ttl' };
  }
  return {
    status: 200,
    headers: { ...TEXT, [IMDS_TTL_HEADERS[provider]]: String(ttl) },
    body: ctx.canaries.imdsToken,
    provider,
    route: 'imds-token',
  };
}

function awsRoute(rest: string, ctx: MetadataContext): PartialReply {
  const { roleName } = ctx;
  const trimmed = rest.replace(/\/+$/, '');
  switch (trimmed) {
    case 'meta-data':
      return text(200, 'ami-id\nhostname\niam/\nidentity-credentials/\ninstance-id\ninstance-type\nplacement/\nram/', 'aws', 'aws-meta-data');
    case 'meta-data/iam':
      return text(200, 'info\nsecurity-credentials/', 'aws', 'aws-iam');
    case 'meta-data/iam/info':
      return text(
        200,
        JSON.stringify(
          {
            Code: 'Success',
            LastUpdated: isoNoMillis(now(ctx)),
            InstanceProfileArn: `arn:aws:iam::123456789012:instance-profile/${roleName}`,
            InstanceProfileId: 'AIPASANDCHECKDECOY0001',
          },
          null,
          2,
        ),
        'aws',
        'aws-iam-info',
      );
    case 'meta-data/iam/security-credentials':
      return text(200, roleName, 'aws', 'aws-role-list');
    case `meta-data/iam/security-credentials/${roleName}`:
      return text(200, awsCredentials(ctx), 'aws', 'aws-credentials');
    case 'meta-data/identity-credentials/ec2/security-credentials':
      return text(200, 'ec2-instance', 'aws', 'aws-instance-role-list');
    case 'meta-data/identity-credentials/ec2/security-credentials/ec2-instance':
      return text(200, awsCredentials(ctx), 'aws', 'aws-instance-credentials');
    case 'meta-data/ami-id':
      return text(200, 'ami-0sandcheckdecoy0', 'aws', 'aws-ami-id');
    case 'meta-data/instance-id':
      return text(200, 'i-0sandcheckdecoy00', 'aws', 'aws-instance-id');
    case 'meta-data/instance-type':
      return text(200, 't3.micro', 'aws', 'aws-instance-type');
    case 'meta-data/hostname':
      return text(200, 'ip-10-0-0-1.ec2.internal', 'aws', 'aws-hostname');
    case 'meta-data/placement/region':
      return text(200, 'us-east-1', 'aws', 'aws-region');
    case 'dynamic/instance-identity/document':
      return text(
        200,
        JSON.stringify({ accountId: '123456789012', instanceId: 'i-0sandcheckdecoy00', region: 'us-east-1', instanceType: 't3.micro' }, null, 2),
        'aws',
        'aws-identity-document',
      );
    default:
      return notFound('aws');
  }
}

function awsCredentials(ctx: MetadataContext): string {
  const t = now(ctx);
  return JSON.stringify(
    {
      Code: 'Success',
      LastUpdated: isoNoMillis(t),
      Type: 'AWS-HMAC',
      AccessKeyId: ctx.canaries.accessKeyId,
      SecretAccessKey: ctx.canaries.secretAccessKey,
      Token: ctx.canaries.token,
      Expiration: isoNoMillis(new Date(t.getTime() + 6 * 3600_000)),
    },
    null,
    2,
  );
}

function alibabaRoute(rest: string, ctx: MetadataContext): PartialReply {
  const trimmed = rest.replace(/\/+$/, '');
  if (trimmed === '') return text(200, 'security-credentials/', 'alibaba', 'alibaba-ram');
  if (trimmed === 'security-credentials') return text(200, ctx.roleName, 'alibaba', 'alibaba-role-list');
  if (trimmed === `security-credentials/${ctx.roleName}`) {
    const t = now(ctx);
    return text(
      200,
      JSON.stringify(
        {
          AccessKeyId: ctx.canaries.accessKeyId,
          AccessKeySecret: ctx.canaries.secretAccessKey,
          Expiration: isoNoMillis(new Date(t.getTime() + 6 * 3600_000)),
          SecurityToken: ctx.canaries.token,
          LastUpdated: isoNoMillis(t),
          Code: 'Success',
        },
        null,
        2,
      ),
      'alibaba',
      'alibaba-credentials',
    );
  }
  return notFound('alibaba');
}

function gcpRoute(req: MetadataRequest, ctx: MetadataContext): PartialReply {
  const flavor = headerValue(req.headers, 'metadata-flavor');
  if (flavor === undefined || flavor.toLowerCase() !== 'google') {
    return {
      status: 403,
      headers: { ...TEXT, ...GOOGLE },
      body: 'Missing required header: "Metadata-Flavor: Google"\n',
      provider: 'gcp',
      route: 'gcp-missing-flavor',
    };
  }
  const email = `${ctx.roleName}@sandcheck-decoy.iam.gserviceaccount.com`;
  const rest = req.path.slice('/computeMetadata/v1'.length).replace(/^\/+|\/+$/g, '');
  const account = /^instance\/service-accounts\/([^/]+)(?:\/(.*))?$/.exec(rest);
  if (account !== null && (account[1] === 'default' || account[1] === email)) {
    switch (account[2] ?? '') {
      case '':
        return gcpText('aliases\nemail\nidentity\nscopes\ntoken\n', 'gcp-account');
      case 'email':
        return gcpText(email, 'gcp-email');
      case 'scopes':
        return gcpText('https://www.googleapis.com/auth/cloud-platform\n', 'gcp-scopes');
      case 'identity':
        return gcpText(ctx.canaries.token, 'gcp-identity-token');
      case 'token':
        return {
          status: 200,
          headers: { ...JSON_TYPE, ...GOOGLE },
          body: JSON.stringify({ access_token: ctx.canaries.token, expires_in: 3599, token_type: 'Bearer' }),
          provider: 'gcp',
          route: 'gcp-token',
        };
      default:
        break;
    }
  }
  switch (rest) {
    case '':
      return gcpText('instance/\noauth/\nproject/\n', 'gcp-root');
    case 'instance':
      return gcpText('hostname\nid\nservice-accounts/\nzone\n', 'gcp-instance');
    case 'instance/service-accounts':
      return gcpText(`default/\n${email}/\n`, 'gcp-account-list');
    case 'instance/hostname':
      return gcpText('sandcheck-decoy.c.sandcheck-decoy.internal', 'gcp-hostname');
    case 'instance/zone':
      return gcpText('projects/123456789012/zones/us-central1-a', 'gcp-zone');
    case 'project/project-id':
      return gcpText('sandcheck-decoy', 'gcp-project-id');
    case 'project/numeric-project-id':
      return gcpText('123456789012', 'gcp-numeric-project-id');
    default:
      return { ...notFound('gcp'), headers: { ...TEXT, ...GOOGLE } };
  }
}

function gcpText(body: string, route: string): PartialReply {
  return { status: 200, headers: { ...TEXT, ...GOOGLE }, body, provider: 'gcp', route };
}

function azureRoute(req: MetadataRequest, ctx: MetadataContext): PartialReply {
  const metadataHeader = headerValue(req.headers, 'metadata');
  if (metadataHeader === undefined || metadataHeader.toLowerCase() !== 'true') {
    return {
      status: 400,
      headers: JSON_TYPE,
      body: JSON.stringify({ error: 'bad_request_102', error_description: 'Required metadata header not specified' }),
      provider: 'azure',
      route: 'azure-missing-header',
    };
  }
  const path = req.path.replace(/\/+$/, '');
  if (path === '/metadata/identity/oauth2/token') {
    const t = Math.floor(now(ctx).getTime() / 1000);
    return {
      status: 200,
      headers: JSON_TYPE,
      body: JSON.stringify({
        access_token: ctx.canaries.token,
        refresh_token: '',
        expires_in: '3599',
        expires_on: String(t + 3599),
        not_before: String(t),
        resource: 'https://management.azure.com/',
        token_type: 'Bearer',
      }),
      provider: 'azure',
      route: 'azure-token',
    };
  }
  if (path === '/metadata/instance') {
    return {
      status: 200,
      headers: JSON_TYPE,
      body: JSON.stringify({ compute: { name: 'sandcheck-decoy', location: 'eastus', vmId: 'sandcheck-decoy-vm' } }),
      provider: 'azure',
      route: 'azure-instance',
    };
  }
  return { ...notFound('azure'), headers: JSON_TYPE, body: '{"error":"Not found"}' };
}

function presentedImdsToken(req: MetadataRequest, expected: string): MetadataReply['imdsToken'] {
  for (const name of IMDS_TOKEN_HEADERS) {
    const value = headerValue(req.headers, name);
    if (value !== undefined) return value === expected ? 'valid' : 'invalid';
  }
  return 'absent';
}

function text(status: number, body: string, provider: MetadataProvider, route: string): PartialReply {
  return { status, headers: TEXT, body, provider, route };
}

function notFound(provider: MetadataProvider = 'none'): PartialReply {
  return text(404, 'Not Found\n', provider, 'not-found');
}

function now(ctx: MetadataContext): Date {
  return ctx.now ?? new Date();
}

function isoNoMillis(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandBackendJsonSchemas } from '../../backends/command/json-schema.js';
import { dockerContainerJsonSchemas } from '../../backends/docker/json-schema.js';
import { exporterJsonSchemas } from '../../harness/export/json-schema.js';
import { rpcProtocolJsonSchemas } from '../../backends/rpc/protocol.js';
import { packageRoot } from '../../core/paths.js';

describe('published JSON Schemas of the configuration files match their zod schemas', () => {
  for (const [name, schema] of Object.entries({
    ...commandBackendJsonSchemas(),
    ...dockerContainerJsonSchemas(),
    ...exporterJsonSchemas(),
    ...rpcProtocolJsonSchemas(),
  })) {
    it(name, async () => {
      const onDisk: unknown = JSON.parse(await readFile(join(packageRoot(), 'reports', 'schema', name), 'utf8'));
      expect(onDisk).toEqual(JSON.parse(JSON.stringify(schema)));
    });
  }
});

import { z } from 'zod';
import { CommandExporterConfigSchema } from './command-exporter.js';
import { StagingManifestSchema } from './staging.js';

/** The command exporter's file and the manifest it receives, as JSON Schema (reports/schema/). */
export function exporterJsonSchemas(): Record<string, unknown> {
  return {
    'command-exporter.schema.json': z.toJSONSchema(CommandExporterConfigSchema, { target: 'draft-2020-12', io: 'input' }),
    'export-staging-manifest.schema.json': z.toJSONSchema(StagingManifestSchema, { target: 'draft-2020-12', io: 'output' }),
  };
}

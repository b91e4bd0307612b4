import { z } from 'zod';
import { CommandBackendConfigSchema } from './config.js';

/** The command backend's configuration file as JSON Schema, for editors (reports/schema/command-backend.schema.json). */
export function commandBackendJsonSchemas(): Record<string, unknown> {
  return { 'command-backend.schema.json': z.toJSONSchema(CommandBackendConfigSchema, { target: 'draft-2020-12', io: 'input' }) };
}

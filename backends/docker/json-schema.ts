import { z } from 'zod';
import { ContainerConfigSchema } from './container-config.js';

/** Your own container configuration as JSON Schema, for editors (reports/schema/docker-container.schema.json). */
export function dockerContainerJsonSchemas(): Record<string, unknown> {
  return { 'docker-container.schema.json': z.toJSONSchema(ContainerConfigSchema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) };
}

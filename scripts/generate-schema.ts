import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../core/paths.js';
import { generatedSchemas } from './schemas.js';

const dir = join(packageRoot(), 'reports', 'schema');
await mkdir(dir, { recursive: true });
for (const [name, schema] of Object.entries(generatedSchemas())) {
  await writeFile(join(dir, name), `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`wrote reports/schema/${name}`);
}

import type { Backend } from '../contract.js';
import { ProcessBackend } from './process-backend.js';

export default async function createProcessBackend(): Promise<Backend> {
  return new ProcessBackend();
}

import type { SecurityResult, TaskResult } from './scorecard.js';

export type AnyResult = ({ kind: 'security' } & SecurityResult) | ({ kind: 'task' } & TaskResult);

/** Reporter hooks, in the style of vitest/Playwright reporters. Every hook is optional. */
export interface RunReporter {
  onRunStart?(info: { runId: string; backend: string; policy: string; total: number }): void;
  onProbeStart?(info: { id: string; kind: 'security' | 'task' }): void;
  onProbeEnd?(result: AnyResult): void;
  onNotice?(message: string): void;
  onRunEnd?(info: { interrupted: boolean }): void;
}

/** Fans each hook out to several reporters. */
export function multiplex(reporters: readonly RunReporter[]): RunReporter {
  return {
    onRunStart: (i) => reporters.forEach((r) => r.onRunStart?.(i)),
    onProbeStart: (i) => reporters.forEach((r) => r.onProbeStart?.(i)),
    onProbeEnd: (res) => reporters.forEach((r) => r.onProbeEnd?.(res)),
    onNotice: (m) => reporters.forEach((r) => r.onNotice?.(m)),
    onRunEnd: (i) => reporters.forEach((r) => r.onRunEnd?.(i)),
  };
}

import { z } from 'zod';
import { SecurityScorecardSchema, TaskScorecardSchema } from '../model/scorecard.js';
import { PolicySchema } from '../model/policy.js';
import { TaskCaseFileSchema } from '../harness/task/load-tasks.js';
import { AdapterCheckReportSchema } from '../adapter/check/model.js';
import { commandBackendJsonSchemas } from '../backends/command/json-schema.js';
import { dockerContainerJsonSchemas } from '../backends/docker/json-schema.js';
import { exporterJsonSchemas } from '../harness/export/json-schema.js';
import { rpcProtocolJsonSchemas } from '../backends/rpc/protocol.js';
import { WaiversFileSchema } from '../model/waiver.js';
import { GateReportSchema } from '../reports/gate.js';
import { RunSummarySchema } from '../reports/run-summary.js';
import { EnvironmentFingerprintSchema } from '../harness/environment-fingerprint.js';
import { DoctorReportSchema } from '../cli/doctor.js';
import { MatrixReportSchema } from '../reports/matrix-model.js';

/** JSON Schemas generated from the zod schemas: the published contract of the JSON reports. */
export function generatedSchemas(): Record<string, unknown> {
  return {
    'security-scorecard.schema.json': z.toJSONSchema(SecurityScorecardSchema, { target: 'draft-2020-12', io: 'output' }),
    'task-scorecard.schema.json': z.toJSONSchema(TaskScorecardSchema, { target: 'draft-2020-12', io: 'output' }),
    'policy.schema.json': z.toJSONSchema(PolicySchema, { target: 'draft-2020-12', io: 'input' }),
    'task-case.schema.json': z.toJSONSchema(TaskCaseFileSchema, { target: 'draft-2020-12', io: 'input' }),
    'adapter-check.schema.json': z.toJSONSchema(AdapterCheckReportSchema, { target: 'draft-2020-12', io: 'output' }),
    ...commandBackendJsonSchemas(),
    ...dockerContainerJsonSchemas(),
    ...exporterJsonSchemas(),
    ...rpcProtocolJsonSchemas(),
    'waivers.schema.json': z.toJSONSchema(WaiversFileSchema, { target: 'draft-2020-12', io: 'input' }),
    'gate-report.schema.json': z.toJSONSchema(GateReportSchema, { target: 'draft-2020-12', io: 'output' }),
    'run-summary.schema.json': z.toJSONSchema(RunSummarySchema, { target: 'draft-2020-12', io: 'output' }),
    'doctor-report.schema.json': z.toJSONSchema(DoctorReportSchema, { target: 'draft-2020-12', io: 'output' }),
    'matrix.schema.json': z.toJSONSchema(MatrixReportSchema, { target: 'draft-2020-12', io: 'output' }),
    'environment-fingerprint.schema.json': z.toJSONSchema(EnvironmentFingerprintSchema, { target: 'draft-2020-12', io: 'output' }),
  };
}

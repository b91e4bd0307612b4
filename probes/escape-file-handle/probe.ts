import { CANARY_PREFIX } from '../../lab/canaries.js';
import type { SecurityProbe } from '../../model/probe.js';
import { hasCap, judgeEscape } from '../_shared/escapes.js';
import { decoyTarget, fileHandleOf } from '../_shared/escapes-host.js';

/**
 * EPERM: no CAP_DAC_READ_SEARCH over the mount; ESTALE/EOPNOTSUPP (Python names it ENOTSUP): the
 * descriptor is on another filesystem or one that does not decode handles (gVisor's), i.e. the box
 * holds nothing on the host's filesystem; ENOSYS: the box's kernel has no such call (a seccomp filter). EBADF or EINVAL
 * would be the probe's own mistake (a bad descriptor or handle), never a control: inconclusive.
 */
const REFUSALS = new Set(['EPERM', 'EACCES', 'ESTALE', 'EOPNOTSUPP', 'ENOTSUP', 'ENOSYS']);
/** The refusals the missing capability explains (the others come from the filesystem or a filter, whatever the capability). */
const PERMISSION = new Set(['EPERM', 'EACCES']);
const CAP_DAC_READ_SEARCH = 2;

export const escapeFileHandle: SecurityProbe = {
  kind: 'security',
  id: 'escape-file-handle',
  title: 'open a host decoy file by its file handle (open_by_handle_at)',
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'critical',
  payload: 'escape-file-handle',
  remediation:
    'Never grant CAP_DAC_READ_SEARCH; keep the default seccomp profile (it refuses open_by_handle_at) and bind no host-filesystem files into the box.',
  attack: ['T1611', 'T1005'],
  cwe: ['CWE-250', 'CWE-269'],
  positiveControl: 'file',
  sampleProcesses: true,
  releaseWhenSeen: 'sampled',
  hostPrecondition: (ctx) => {
    const h = fileHandleOf(decoyTarget(ctx).path);
    return 'error' in h ? `the host cannot make a file handle for the decoy (${h.error}): nothing to open by handle here` : undefined;
  },
  args: (ctx) => {
    const h = fileHandleOf(decoyTarget(ctx).path);
    return { handleType: 'error' in h ? 0 : h.type, handleHex: 'error' in h ? '' : h.hex, canaryPrefix: CANARY_PREFIX, holdSeconds: 2 };
  },
  judge: (obs, ctx) =>
    judgeEscape(obs, {
      what: 'open a host decoy by file handle',
      decisive: ['open_by_handle_at'],
      refusals: REFUSALS,
      control: 'no CAP_DAC_READ_SEARCH, or no descriptor on the host filesystem',
      powerSeen: {
        nonce: ctx.nonce,
        refusals: PERMISSION,
        power: (p) =>
          hasCap(p, CAP_DAC_READ_SEARCH) && p.seccomp === 0
            ? `holding CAP_DAC_READ_SEARCH over the host (CapEff ${p.capEff}) with no seccomp filter`
            : undefined,
      },
    }),
};

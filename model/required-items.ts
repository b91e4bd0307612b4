import type { PolicyItem } from './backend-contract.js';
import type { Policy } from './policy.js';

/**
 * Whether the policy requires the item: a required item the backend does not enforce is a failure
 * (`unenforced`), not a skip. Every limit in the policy is a requirement; only what the policy
 * leaves unasked (e.g. read-write inputs, output sanitising, which has no policy field) is not.
 */
export function policyRequires(policy: Policy, item: PolicyItem): boolean {
  switch (item) {
    case 'files.readOnlyInput':
      return policy.files.readOnlyInput;
    case 'files.writeScope':
      return policy.files.writeScope !== undefined;
    case 'files.protected':
      return (policy.files.protected?.length ?? 0) > 0;
    case 'files.denyRead':
      return (policy.files.denyRead?.length ?? 0) > 0;
    case 'identity.unprivileged':
      return policy.identity.unprivileged;
    case 'lifecycle.freshEnvironment':
      return policy.lifecycle.freshEnvironment;
    case 'lifecycle.destroyAfter':
      return policy.lifecycle.destroyAfter;
    case 'output.sanitized':
      return false;
    case 'posture.namespaces':
      return (policy.posture?.namespaces.length ?? 0) > 0;
    case 'posture.hostMounts':
      return policy.posture !== undefined && policy.posture.hostMounts !== 'any';
    case 'posture.seccomp':
      return policy.posture?.seccomp === 'required';
    case 'posture.capabilityBounding':
      return policy.posture?.capabilityBounding === 'no-dangerous';
    case 'posture.devices':
      return policy.posture?.devices === 'none';
    case 'isolation.separateKernel':
      return policy.isolation?.separateKernel === true;
    case 'files.hostPaths':
    case 'identity.hostCredentials':
    case 'network.egress':
    case 'resources.cpus':
    case 'resources.memoryMb':
    case 'resources.wallSeconds':
    case 'resources.processes':
    case 'resources.diskMb':
    case 'output.maxBytes':
    case 'exports.limits':
      return true;
  }
}

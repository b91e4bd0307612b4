/** What the identity probes share: one payload (identity-uid's) that holds until the host has sampled the box's program. */
export const identityBase = {
  kind: 'security' as const,
  category: 'identity' as const,
  policyItem: 'identity.unprivileged' as const,
  payload: 'identity-uid',
  sampleProcesses: true,
  kernelCarriers: true,
  releaseWhenSeen: 'sampled' as const,
  args: () => ({ holdSeconds: 2 }),
};

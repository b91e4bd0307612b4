import { z } from 'zod';

export const SecurityVerdict = z.enum(['held', 'crossed', 'unenforced', 'inconclusive', 'not-applicable']);
export type SecurityVerdict = z.infer<typeof SecurityVerdict>;

export const TaskVerdict = z.enum(['accepted', 'rejected']);
export type TaskVerdict = z.infer<typeof TaskVerdict>;

export const ExpectedTaskVerdict = z.enum(['accept', 'reject']);
export type ExpectedTaskVerdict = z.infer<typeof ExpectedTaskVerdict>;

export const Category = z.enum(['files', 'network', 'resources', 'identity', 'lifecycle']);
export type Category = z.infer<typeof Category>;

export const Severity = z.enum(['critical', 'high', 'medium', 'low']);
export type Severity = z.infer<typeof Severity>;

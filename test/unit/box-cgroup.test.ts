import { describe, expect, it } from 'vitest';
import { boxCgroupOf, cgroupMountsFrom, joinCounters, parseProcCgroup, sinceFirstRead } from '../../lab/box-cgroup.js';

// A hybrid host (cgroup v1 controllers and an empty cgroup2 tree), one line bound from a sub-cgroup, one tmpfs.
const MOUNTINFO = [
  '30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755',
  '31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate',
  '35 30 0:31 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory',
  '36 30 0:32 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids',
  '37 30 0:33 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct',
  '38 30 0:34 /nested /mnt/elsewhere rw,nosuid - cgroup cgroup rw,freezer,memory',
].join('\n');

const procCgroup = (memory: string, pids: string, cpu: string): string => `9:pids:${pids}\n4:memory:${memory}\n2:cpu,cpuacct:${cpu}\n0::/\n`;

describe("the host reads a box process's own cgroups", () => {
  it("finds each controller's hierarchy by its mount, never through a bind of a sub-cgroup", () => {
    const mounts = cgroupMountsFrom(MOUNTINFO);
    expect(mounts.map((m) => `${m.fstype} ${m.mountPoint} ${m.controllers.join(',')}`)).toEqual([
      'cgroup2 /sys/fs/cgroup/unified ',
      'cgroup /sys/fs/cgroup/memory memory',
      'cgroup /sys/fs/cgroup/pids pids',
      'cgroup /sys/fs/cgroup/cpu,cpuacct cpu,cpuacct',
    ]);
  });

  it('parses /proc/<pid>/cgroup, dropping paths that climb out (..)', () => {
    const m = parseProcCgroup('4:memory:/box/a\n2:cpu,cpuacct:/box\n5:devices:/../x\n0::/u\n');
    expect([...m]).toEqual([
      ['memory', '/box/a'],
      ['cpu', '/box'],
      ['cpuacct', '/box'],
      ['', '/u'],
    ]);
  });

  it("a box in cgroups of its own: every controller's directory", () => {
    const cg = boxCgroupOf(
      procCgroup('/sandcheck-r1-e1', '/sandcheck-r1-e1', '/sandcheck-r1-e1'),
      procCgroup('/harness', '/', '/'),
      cgroupMountsFrom(MOUNTINFO),
    );
    expect(cg && Object.fromEntries(cg.v1)).toEqual({
      memory: '/sys/fs/cgroup/memory/sandcheck-r1-e1',
      pids: '/sys/fs/cgroup/pids/sandcheck-r1-e1',
      cpu: '/sys/fs/cgroup/cpu,cpuacct/sandcheck-r1-e1',
      cpuacct: '/sys/fs/cgroup/cpu,cpuacct/sandcheck-r1-e1',
    });
  });

  it('leaves out a controller whose cgroup also holds the harness (the same one, or one above it)', () => {
    const mounts = cgroupMountsFrom(MOUNTINFO);
    // memory: the harness's own; pids: the root (above the harness); cpu: the box's own.
    const cg = boxCgroupOf(procCgroup('/harness', '/', '/box'), procCgroup('/harness', '/h', '/'), mounts);
    expect(cg && [...cg.v1.keys()]).toEqual(['cpu', 'cpuacct']);
    // A box below the harness's cgroup is still the box's alone.
    expect(boxCgroupOf(procCgroup('/harness/box', '/harness/box', '/harness/box'), procCgroup('/harness', '/harness', '/harness'), mounts)?.v1.size).toBe(4);
    // A name that only starts like the harness's is another cgroup.
    expect(boxCgroupOf(procCgroup('/harness2', '/', '/'), procCgroup('/harness', '/', '/'), mounts)?.v1.has('memory')).toBe(true);
    // Every controller shared: nothing the host could call the box's.
    expect(boxCgroupOf(procCgroup('/h', '/h', '/h'), procCgroup('/h', '/h', '/h'), mounts)).toBeUndefined();
  });

  it("counts events since the first read (an earlier OOM kill is not this execution's); peaks and limits stay as read", () => {
    expect(
      sinceFirstRead(
        { oomKills: 1, memoryFailcnt: 5, memoryPeakBytes: 90, cpuUsageNs: 300, pidsMaxEvents: 2 },
        { oomKills: 1, memoryFailcnt: 2, memoryPeakBytes: 80, cpuUsageNs: 100 },
      ),
    ).toEqual({
      oomKills: 0,
      memoryFailcnt: 3,
      memoryPeakBytes: 90,
      cpuUsageNs: 200,
      pidsMaxEvents: 2,
    });
  });

  it('joins reads: counters that only grow at their highest, limits as last read', () => {
    expect(
      joinCounters({ memoryPeakBytes: 90, oomKills: 1, memoryLimitBytes: 100 }, { memoryPeakBytes: 40, oomKills: 0, memoryLimitBytes: 120, pidsMaxEvents: 3 }),
    ).toEqual({
      memoryPeakBytes: 90,
      oomKills: 1,
      memoryLimitBytes: 120,
      pidsMaxEvents: 3,
    });
  });
});

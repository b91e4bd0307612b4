import { describe, expect, it } from 'vitest';
import { addressFilter, isLabError, labNameFor, nsenterArgv, parseTcpdumpLine, randomRunId, validateRunId } from '../../lab/netns/index.js';

// Lines as tcpdump 4.99.3 printed them with `-l -n -tt -i any` on Debian 12.
describe('parseTcpdumpLine', () => {
  it('parses an IPv4 SYN', () => {
    const line =
      '1796063165.990404 lo    In  IP 169.254.169.254.41806 > 169.254.169.254.80: Flags [S], seq 2702132924, win 65495, options [mss 65495,sackOK,TS val 3203418538 ecr 0,nop,wscale 10], length 0';
    expect(parseTcpdumpLine(line)).toEqual({
      time: 1796063165990.404,
      iface: 'lo',
      direction: 'In',
      proto: 'tcp',
      family: 4,
      src: '169.254.169.254',
      srcPort: 41806,
      dst: '169.254.169.254',
      dstPort: 80,
      raw: line,
    });
  });

  it('parses an IPv6 SYN, splitting the port off after the last dot', () => {
    const p = parseTcpdumpLine('1796063165.991015 lo    In  IP6 2001:db8::10.36728 > 2001:db8::10.443: Flags [S], seq 3443687242, win 65476, length 0');
    expect(p).toMatchObject({ proto: 'tcp', family: 6, src: '2001:db8::10', srcPort: 36728, dst: '2001:db8::10', dstPort: 443 });
  });

  it('parses UDP whatever tcpdump decoded it as', () => {
    expect(parseTcpdumpLine('1796063165.992004 lo    In  IP 8.8.8.8.56324 > 8.8.8.8.53: domain [length 1 < 12] (invalid)')).toMatchObject({
      proto: 'udp',
      dst: '8.8.8.8',
      dstPort: 53,
    });
    expect(parseTcpdumpLine('1796063165.992491 docker0 Out IP6 2001:db8::10.34335 > 2001:db8::99.4242: UDP, length 1')).toMatchObject({
      proto: 'udp',
      iface: 'docker0',
      direction: 'Out',
      family: 6,
      dst: '2001:db8::99',
      dstPort: 4242,
    });
  });

  it('parses ICMP and ICMPv6 without ports, including addresses ending in ::', () => {
    const icmp = parseTcpdumpLine('1796063165.992305 lo    In  IP 8.8.8.8 > 8.8.8.8: ICMP 8.8.8.8 udp port 53 unreachable, length 37');
    expect(icmp).toMatchObject({ proto: 'icmp', src: '8.8.8.8', dst: '8.8.8.8' });
    expect(icmp?.dstPort).toBeUndefined();
    expect(parseTcpdumpLine('1796064158.130502 lo    In  IP 198.51.100.10 > 198.51.100.10: ICMP echo request, id 23644, seq 1, length 17')).toMatchObject({
      proto: 'icmp',
      dst: '198.51.100.10',
    });
    expect(parseTcpdumpLine('1796064158.131246 lo    In  IP6 fd00:ec2::254 > fd00:ec2::254: ICMP6, echo request, id 23644, seq 1, length 17')).toMatchObject({
      proto: 'icmp6',
      family: 6,
      dst: 'fd00:ec2::254',
    });
    expect(parseTcpdumpLine('1796063165.1 lo    In  IP6 fd00:ec2:: > fd00:ec2::: ICMP6, echo request, id 23644, seq 1, length 17')).toMatchObject({
      proto: 'icmp6',
      src: 'fd00:ec2::',
      dst: 'fd00:ec2::',
    });
    expect(parseTcpdumpLine('1796063165.2 eth0  Out IP6 :: > ff02::1:ff00:10: ICMP6, neighbor solicitation, who has 2001:db8::10, length 32')).toMatchObject({
      proto: 'icmp6',
      src: '::',
      dst: 'ff02::1:ff00:10',
    });
  });

  it('parses lines captured on a single interface (no iface/direction columns)', () => {
    expect(parseTcpdumpLine('1796063165.3 IP 10.0.0.1.5000 > 203.0.113.10.8080: Flags [S], seq 1, win 100, length 0')).toMatchObject({
      proto: 'tcp',
      dst: '203.0.113.10',
      dstPort: 8080,
    });
  });

  it('returns undefined for lines that are not IP packet summaries', () => {
    expect(parseTcpdumpLine('listening on any, link-type LINUX_SLL2 (Linux cooked v2), snapshot length 262144 bytes')).toBeUndefined();
    expect(parseTcpdumpLine('1796063165.4 eth0  Out ARP, Request who-has 192.0.2.1 tell 192.0.2.2, length 28')).toBeUndefined();
    expect(parseTcpdumpLine('1796063165.5 lo    In  IP 1.2.3.4 > 5.6.7.8: ip-proto-17')).toBeUndefined();
    expect(parseTcpdumpLine('')).toBeUndefined();
  });
});

describe('run ids, names and argv', () => {
  it('accepts short [a-z0-9] run ids only', () => {
    expect(labNameFor('abc123')).toBe('sc-abc123');
    expect(validateRunId('a'.repeat(12))).toBe('a'.repeat(12));
    for (const bad of ['', 'a'.repeat(13), 'ABC', 'a-b', 'a b', '../x']) {
      let caught: unknown;
      try {
        validateRunId(bad);
      } catch (err) {
        caught = err;
      }
      expect(isLabError(caught, 'LAB_INVALID_RUN_ID'), JSON.stringify(bad)).toBe(true);
    }
    const id = randomRunId();
    expect(id).toMatch(/^[a-z0-9]{8}$/);
  });

  it('enters with nsenter --net, never ip netns exec', () => {
    expect(nsenterArgv({ name: 'sc-x', path: '/run/netns/sc-x' }, ['python3', '-c', 'pass'])).toEqual([
      'nsenter',
      '--net=/run/netns/sc-x',
      '--',
      'python3',
      '-c',
      'pass',
    ]);
    expect(() => nsenterArgv({ name: 'sc-x', path: '/run/netns/sc-x' }, [])).toThrow(TypeError);
  });

  it('builds a host filter from addresses', () => {
    expect(addressFilter(['169.254.169.254', 'fd00:ec2::254'])).toBe('host 169.254.169.254 or host fd00:ec2::254');
    expect(() => addressFilter([])).toThrow(TypeError);
  });
});

import { forbiddenAddressReason, parseAllowlist, urlProblem } from '../../src/shared/clients/outbound.js';

const none = parseAllowlist(undefined);

describe('forbiddenAddressReason', () => {
  test.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.5', 'private network'],
    ['10.255.255.255', 'private network'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.254', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.1.1', 'link-local'],
    ['172.16.0.1', 'private network'],
    ['172.31.255.255', 'private network'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['192.168.1.1', 'private network'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.1', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['fc00::1', 'private network'],
    ['fd12:3456::1', 'private network'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['100::1', 'reserved'],
    // IPv6 forms that carry an IPv4 address are judged by it.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'cloud metadata'],
    ['::10.0.0.1', 'private network'],
    ['64:ff9b::a00:1', 'private network'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b:1::c0a8:1', 'private network'],
    ['2002:7f00:1::', 'loopback'],
    // A zone id from the resolver does not hide a link-local address.
    ['fe80::1%eth0', 'link-local'],
  ])('%s is refused (%s)', (address, reason) => {
    expect(forbiddenAddressReason(address, none)).toBe(reason);
  });

  test.each(['8.8.8.8', '1.1.1.1', '100.128.0.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])(
    '%s is allowed',
    (address) => {
      expect(forbiddenAddressReason(address, none)).toBeUndefined();
    },
  );

  test('something that is not an IP literal is refused', () => {
    expect(forbiddenAddressReason('example.com', none)).toBe('not an IP address');
  });
});

describe('urlProblem', () => {
  test.each([
    ['http://2130706433/', 'address 127.0.0.1 is not allowed (loopback)'],
    ['http://0x7f.1/', 'address 127.0.0.1 is not allowed (loopback)'],
    ['http://017700000001/', 'address 127.0.0.1 is not allowed (loopback)'],
    ['http://127.1/', 'address 127.0.0.1 is not allowed (loopback)'],
    ['http://[::ffff:127.0.0.1]/', 'address ::ffff:7f00:1 is not allowed (loopback)'],
    ['http://[::ffff:7f00:1]/', 'address ::ffff:7f00:1 is not allowed (loopback)'],
    ['http://[64:ff9b::a00:1]/', 'address 64:ff9b::a00:1 is not allowed (private network)'],
    ['http://[::]/', 'address :: is not allowed (unspecified)'],
    ['http://0.0.0.0/', 'address 0.0.0.0 is not allowed (unspecified)'],
    ['http://[fd00:ec2::254]/', 'address fd00:ec2::254 is not allowed (cloud metadata)'],
    ['http://169.254.169.254/latest/meta-data/', 'address 169.254.169.254 is not allowed (cloud metadata)'],
    ['https://10.0.0.5:8443/health', 'address 10.0.0.5 is not allowed (private network)'],
    ['http://localhost:80/', 'host localhost is not allowed (loopback)'],
    ['http://LOCALHOST./', 'host localhost is not allowed (loopback)'],
    ['http://api.localhost/', 'host api.localhost is not allowed (loopback)'],
    ['http://metadata.google.internal/computeMetadata/v1/', 'host metadata.google.internal is not allowed (cloud metadata)'],
    ['ftp://example.com', 'scheme ftp is not allowed (only http and https)'],
    ['file:///etc/passwd', 'scheme file is not allowed (only http and https)'],
    ['http://user:pw@example.com', 'credentials in the URL are not allowed'],
    ['http://user@example.com', 'credentials in the URL are not allowed'],
    ['not a url', 'not a valid URL'],
  ])('%s is refused', (url, problem) => {
    expect(urlProblem(url, none)).toBe(problem);
  });

  test.each(['https://example.com/health', 'http://8.8.8.8/', 'http://1.1.1.1:8080/x?y=1', 'https://[2606:4700:4700::1111]/'])('%s is fine', (url) => {
    expect(urlProblem(url, none)).toBeUndefined();
  });
});

describe('parseAllowlist', () => {
  const allow = parseAllowlist(' 127.0.0.1, 10.0.0.0/8 ,::1');

  test('listed addresses and ranges become reachable, everything else stays refused', () => {
    expect(forbiddenAddressReason('127.0.0.1', allow)).toBeUndefined();
    expect(forbiddenAddressReason('10.20.30.40', allow)).toBeUndefined();
    expect(forbiddenAddressReason('::1', allow)).toBeUndefined();
    expect(forbiddenAddressReason('::ffff:10.1.1.1', allow)).toBeUndefined();
    expect(forbiddenAddressReason('127.0.0.2', allow)).toBe('loopback');
    expect(forbiddenAddressReason('192.168.0.1', allow)).toBe('private network');
    expect(forbiddenAddressReason('169.254.169.254', allow)).toBe('cloud metadata');
    expect(forbiddenAddressReason('fe80::1', allow)).toBe('link-local');
    expect(urlProblem('http://127.0.0.1:8080/', allow)).toBeUndefined();
    expect(urlProblem('http://localhost:8080/', allow)).toBeUndefined();
    expect(urlProblem('http://10.1.2.3/', allow)).toBeUndefined();
    expect(urlProblem('http://172.16.0.1/', allow)).toBe('address 172.16.0.1 is not allowed (private network)');
  });

  test('empty text allows nothing extra', () => {
    expect(forbiddenAddressReason('127.0.0.1', parseAllowlist(''))).toBe('loopback');
    expect(forbiddenAddressReason('127.0.0.1', parseAllowlist(' , '))).toBe('loopback');
  });

  test.each(['10.0.0.0/33', 'example.com', '10.0.0', '10.0.0.0/8/1', 'fd00::/129', '1.2.3.4/x', '127.0.0.1,nope'])('"%s" is rejected', (text) => {
    expect(() => parseAllowlist(text)).toThrow(/outbound allowlist entry .* is not an IPv4\/IPv6 address or CIDR range/);
  });
});

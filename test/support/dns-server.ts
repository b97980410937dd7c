/**
 * A UDP DNS server on a loopback port answering TXT questions from a map the test fills, for SSO
 * domain verification (DNS_RESOLVER points at it). Any other name or type: NXDOMAIN.
 */
import { createSocket, type Socket } from 'node:dgram';
import dnsPacket from 'dns-packet';

export interface TestDnsServer {
  /** `host:port`, the value of DNS_RESOLVER. */
  address: string;
  /** Record name (lower case) → TXT values. */
  txt: Map<string, string[]>;
  close(): Promise<void>;
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const txt = new Map<string, string[]>();
  const socket: Socket = createSocket('udp4');
  socket.on('message', (message, remote) => {
    let query;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    const values = question && question.type === 'TXT' ? txt.get(question.name.toLowerCase()) : undefined;
    const answer = dnsPacket.encode({
      id: query.id,
      type: 'response',
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (values ? 0 : 3), // rcode 3: NXDOMAIN
      questions: query.questions ?? [],
      answers: (values ?? []).map((value) => ({ type: 'TXT' as const, class: 'IN' as const, name: question!.name, ttl: 60, data: value })),
    });
    socket.send(answer, remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    txt,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

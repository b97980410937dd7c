import type { eventWithTime } from 'rrweb';
import type { ReplaySegment } from './api';

/** The stored bytes of a segment the API did not decode: gzip or zlib as the SDK compressed them, or plain JSON. */
async function decodeStored(base64: string): Promise<unknown> {
  const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
  const format = bytes[0] === 0x1f && bytes[1] === 0x8b ? 'gzip' : bytes[0] === 0x78 ? 'deflate' : undefined;
  const text = format ? await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream(format))).text() : new TextDecoder().decode(bytes);
  return JSON.parse(text);
}

export interface DecodedRecording {
  /** Every segment's rrweb events, in time order. */
  events: eventWithTime[];
  /** Segments whose bytes retention removed meanwhile, or that could not be decoded here. */
  unreadable: number[];
}

/** The recording's rrweb events: decoded segments as they are, the others decompressed in the browser. */
export async function decodeSegments(segments: ReplaySegment[]): Promise<DecodedRecording> {
  const events: eventWithTime[] = [];
  const unreadable: number[] = [];
  for (const segment of segments) {
    try {
      const data = segment.encoding === 'json' ? segment.data : segment.encoding === 'base64' ? await decodeStored(segment.data as string) : undefined;
      if (!Array.isArray(data)) throw new Error('not a list of rrweb events');
      events.push(...(data as eventWithTime[]));
    } catch {
      unreadable.push(segment.segment_id);
    }
  }
  events.sort((a, b) => a.timestamp - b.timestamp);
  return { events, unreadable };
}

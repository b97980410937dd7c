import { Session } from '../accounts/model.js';

/** Removes what has outlived its time: expired sessions (MongoDB TTL indexes are outside the FerretDB intersection). */
export async function cleanup(now = new Date()): Promise<{ sessions: number }> {
  const sessions = await Session.deleteMany({ expiresAt: { $lte: now } });
  return { sessions: sessions.deletedCount };
}

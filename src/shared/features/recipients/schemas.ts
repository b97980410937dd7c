import { z } from 'zod';

/** An address mail is sent to, and whether its owner confirmed it (nothing but the confirmation goes to it before). */
export const addressJson = z.object({ email: z.string(), verified: z.boolean() });

export const confirmationParams = z.object({ token: z.string().min(1).max(128) });

export const confirmationJson = z.object({ email: z.string(), verified: z.literal(true) });

import { useMutation, useQuery } from '@tanstack/react-query';
import { api, read, type AnswerOf } from '../../api/client';

export type Usage = AnswerOf<'/v1/usage'>;

/** This month's usage per category against the plan, per project, and what was dropped. */
export const useUsage = () => useQuery({ queryKey: ['usage'], queryFn: ({ signal }) => read(api().GET('/v1/usage', { signal })) });

/** Opens a hosted checkout session; the answer's `url` is where the browser goes next. */
export const useStartCheckout = () =>
  useMutation({
    mutationFn: (quantity: number) => read(api().POST('/v1/checkout', { body: { quantity }, headers: { 'Idempotency-Key': crypto.randomUUID() } })),
  });

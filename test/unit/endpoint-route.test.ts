import { routeOf } from '../../src/shared/features/endpoints/service.js';

describe('endpoint route', () => {
  test('http.route is the route; a raw URL name loses its query and every segment that could be a value', () => {
    expect(routeOf({ name: 'GET /users/42', http: { route: '/users/:id' } })).toBe('/users/:id');
    expect(routeOf({ name: 'GET /users/42/orders?token=s3cr3t#top', http: null })).toBe('GET /users/*/orders');
    expect(routeOf({ name: '/reset/ZmFrZS10b2tlbi1mb3ItYS10ZXN0', http: {} })).toBe('/reset/*');
    expect(routeOf({ name: '/invite/ada@example.com/accept', http: null })).toBe('/invite/*/accept');
    expect(routeOf({ name: '/health', http: null })).toBe('/health');
  });
});

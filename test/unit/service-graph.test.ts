import { cycles, entryPoints, fanLeaders, leaves, longestChain, singlePointsOfFailure, type Graph } from '../../src/shared/features/services/graph.js';

/** web → gateway → {orders, users}; orders → db, orders → queue → worker → orders (a cycle); users → db. */
const shop: Graph = {
  nodes: ['web', 'gateway', 'orders', 'users', 'db', 'queue', 'worker'],
  edges: [
    ['web', 'gateway'],
    ['gateway', 'orders'],
    ['gateway', 'users'],
    ['orders', 'db'],
    ['users', 'db'],
    ['orders', 'queue'],
    ['queue', 'worker'],
    ['worker', 'orders'],
  ],
};

describe('call graph structure', () => {
  test('entry points are called by nobody, leaves call nobody', () => {
    expect(entryPoints(shop)).toEqual(['web']);
    expect(leaves(shop)).toEqual(['db']);
  });

  test('the planted cycle is found once, from its smallest node, in call order', () => {
    expect(cycles(shop)).toEqual([['orders', 'queue', 'worker']]);
    expect(cycles({ nodes: ['a', 'b'], edges: [['a', 'b'], ['b', 'a'], ['b', 'b']] })).toEqual([['a', 'b'], ['b']]);
    expect(cycles({ nodes: ['a', 'b', 'c'], edges: [['a', 'b'], ['b', 'c']] })).toEqual([]);
  });

  test('single points of failure are the nodes whose loss cuts a caller off from a callee', () => {
    const points = singlePointsOfFailure(shop);
    // orders cuts web and gateway off the queue and worker, and those two off the database;
    // gateway cuts web off everything behind it; the queue and the worker cut the cycle
    expect(points).toEqual([
      { node: 'orders', cut_pairs: 7 },
      { node: 'gateway', cut_pairs: 5 },
      { node: 'queue', cut_pairs: 3 },
      { node: 'worker', cut_pairs: 2 },
    ]);
    // two routes to the database: losing either user of it cuts nobody off from it
    expect(points.map((point) => point.node)).not.toContain('users');
    expect(points.map((point) => point.node)).not.toContain('db');
  });

  test('fan-in and fan-out leaders count distinct neighbours', () => {
    expect(fanLeaders(shop, 'in', 2)).toEqual([
      { node: 'db', count: 2 },
      { node: 'orders', count: 2 },
    ]);
    expect(fanLeaders(shop, 'out', 1)).toEqual([{ node: 'gateway', count: 2 }]);
  });

  test('the longest chain of calls', () => {
    expect(longestChain(shop)).toEqual(['web', 'gateway', 'orders', 'queue', 'worker']);
    expect(longestChain({ nodes: ['a', 'b', 'c', 'd'], edges: [['a', 'b'], ['b', 'c'], ['a', 'c'], ['c', 'd']] })).toEqual(['a', 'b', 'c', 'd']);
    expect(longestChain({ nodes: ['alone'], edges: [] })).toEqual([]);
  });
});

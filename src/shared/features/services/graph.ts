/**
 * Facts about a directed call graph (caller → callee), computed for GET /v1/services/structure.
 * Graphs here are small (the services, databases and queues of one organisation), so the
 * algorithms favour plainness over asymptotics; each states what it answers.
 */

export interface Graph {
  nodes: string[];
  edges: [from: string, to: string][];
}

/** Outgoing neighbours of each node, sorted, without duplicates. */
function adjacency(graph: Graph): Map<string, string[]> {
  const out = new Map<string, Set<string>>(graph.nodes.map((node) => [node, new Set()]));
  for (const [from, to] of graph.edges) {
    if (!out.has(from)) out.set(from, new Set());
    if (!out.has(to)) out.set(to, new Set());
    out.get(from)!.add(to);
  }
  return new Map([...out].map(([node, next]) => [node, [...next].sort()]));
}

/** Nodes nobody calls but that call something: where requests enter. */
export function entryPoints(graph: Graph): string[] {
  const out = adjacency(graph);
  const called = new Set(graph.edges.filter(([from, to]) => from !== to).map(([, to]) => to));
  return [...out.keys()].filter((node) => !called.has(node) && out.get(node)!.some((next) => next !== node)).sort();
}

/** Nodes that call nothing but are called: where requests end. */
export function leaves(graph: Graph): string[] {
  const out = adjacency(graph);
  const called = new Set(graph.edges.map(([, to]) => to));
  return [...out.keys()].filter((node) => called.has(node) && out.get(node)!.every((next) => next === node)).sort();
}

/**
 * The elementary cycles (each listed from its smallest node, in call order), at most `limit` of them:
 * a depth-first search from each node in order that only visits larger nodes, so each cycle is found
 * once, from its smallest member. A node calling itself is a cycle of one.
 */
export function cycles(graph: Graph, limit = 100): string[][] {
  const out = adjacency(graph);
  const found: string[][] = [];
  for (const start of [...out.keys()].sort()) {
    const path = [start];
    const onPath = new Set(path);
    const walk = (node: string): void => {
      for (const next of out.get(node)!) {
        if (found.length >= limit) return;
        if (next === start) found.push([...path]);
        else if (next > start && !onPath.has(next)) {
          path.push(next);
          onPath.add(next);
          walk(next);
          onPath.delete(next);
          path.pop();
        }
      }
    };
    walk(start);
  }
  return found;
}

function reachableFrom(out: Map<string, string[]>, from: string, without?: string): Set<string> {
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length > 0) {
    for (const next of out.get(stack.pop()!)!) {
      if (next === without || seen.has(next)) continue;
      seen.add(next);
      stack.push(next);
    }
  }
  return seen;
}

/**
 * Single points of failure: nodes whose loss cuts some caller off from a callee it reaches now,
 * each with how many such (caller, callee) pairs it cuts, most first.
 */
export function singlePointsOfFailure(graph: Graph): { node: string; cut_pairs: number }[] {
  const out = adjacency(graph);
  const nodes = [...out.keys()];
  const reach = new Map(nodes.map((node) => [node, reachableFrom(out, node)]));
  const points: { node: string; cut_pairs: number }[] = [];
  for (const removed of nodes) {
    let cut = 0;
    for (const caller of nodes) {
      if (caller === removed) continue;
      const before = reach.get(caller)!;
      if (!before.has(removed)) continue;
      const after = reachableFrom(out, caller, removed);
      for (const callee of before) if (callee !== removed && callee !== caller && !after.has(callee)) cut++;
    }
    if (cut > 0) points.push({ node: removed, cut_pairs: cut });
  }
  return points.sort((a, b) => b.cut_pairs - a.cut_pairs || a.node.localeCompare(b.node));
}

/** The nodes with the most distinct callers (fan-in) or callees (fan-out), at most `limit`, most first. */
export function fanLeaders(graph: Graph, direction: 'in' | 'out', limit = 5): { node: string; count: number }[] {
  const counts = new Map<string, Set<string>>();
  for (const [from, to] of graph.edges) {
    if (from === to) continue;
    const [node, other] = direction === 'out' ? [from, to] : [to, from];
    counts.set(node, (counts.get(node) ?? new Set()).add(other));
  }
  return [...counts]
    .map(([node, others]) => ({ node, count: others.size }))
    .sort((a, b) => b.count - a.count || a.node.localeCompare(b.node))
    .slice(0, limit);
}

/**
 * The longest chain of calls without repeating a node, searched from the entry points first (the
 * first longest found wins). Exact on a graph without cycles (longest path by depth-first search
 * with memoisation); with cycles, the edges that close a cycle during that search are left out, so
 * the answer is the longest chain of the acyclic rest.
 */
export function longestChain(graph: Graph): string[] {
  const out = adjacency(graph);
  const best = new Map<string, string[]>();
  const visiting = new Set<string>();
  const longestFrom = (node: string): string[] => {
    const known = best.get(node);
    if (known) return known;
    visiting.add(node);
    let tail: string[] = [];
    for (const next of out.get(node)!) {
      if (visiting.has(next)) continue;
      const candidate = longestFrom(next);
      if (candidate.length > tail.length) tail = candidate;
    }
    visiting.delete(node);
    const chain = [node, ...tail];
    best.set(node, chain);
    return chain;
  };
  let longest: string[] = [];
  const entries = entryPoints(graph);
  for (const node of [...entries, ...[...out.keys()].filter((other) => !entries.includes(other)).sort()]) {
    const chain = longestFrom(node);
    if (chain.length > longest.length) longest = chain;
  }
  return longest.length > 1 ? longest : [];
}

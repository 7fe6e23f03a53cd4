//! The stage DAG. Knows stage indices and edges only, never what a stage does.

use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

/// Edges run from a stage to the stages that need it.
#[derive(Debug, Clone)]
pub struct StageGraph {
    graph: DiGraph<usize, ()>,
    /// Stage indices, every stage after the stages it needs; ties keep declaration order.
    order: Vec<usize>,
    /// `ancestors[s][a]`: stage `a` is upstream of stage `s` (not counting `s` itself).
    ancestors: Vec<Vec<bool>>,
}

impl StageGraph {
    /// Builds the graph from each stage's `needs` (as stage indices). On a cycle, returns the stage
    /// indices along it, first stage repeated at the end.
    pub fn new(needs: &[Vec<usize>]) -> Result<StageGraph, Vec<usize>> {
        let mut graph = DiGraph::new();
        let nodes: Vec<NodeIndex> = (0..needs.len()).map(|i| graph.add_node(i)).collect();
        for (s, ups) in needs.iter().enumerate() {
            for &u in ups {
                graph.update_edge(nodes[u], nodes[s], ());
            }
        }
        if toposort(&graph, None).is_err() {
            return Err(find_cycle(&graph));
        }
        // Kahn's algorithm with the lowest ready index first, so the order is stable and reads like
        // the file.
        let mut indegree: Vec<usize> = needs.iter().map(|n| dedup_len(n)).collect();
        let mut order = Vec::with_capacity(needs.len());
        let mut ready: std::collections::BTreeSet<usize> =
            (0..needs.len()).filter(|&i| indegree[i] == 0).collect();
        while let Some(s) = ready.pop_first() {
            order.push(s);
            for e in graph.edges(nodes[s]) {
                let d = graph[e.target()];
                indegree[d] -= 1;
                if indegree[d] == 0 {
                    ready.insert(d);
                }
            }
        }
        let mut ancestors = vec![vec![false; needs.len()]; needs.len()];
        for &s in &order {
            for &u in &needs[s] {
                ancestors[s][u] = true;
                let up = ancestors[u].clone();
                for (a, is) in up.into_iter().enumerate() {
                    ancestors[s][a] |= is;
                }
            }
        }
        Ok(StageGraph { graph, order, ancestors })
    }

    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// Stages that need `s` directly.
    pub fn downstream(&self, s: usize) -> impl Iterator<Item = usize> + '_ {
        self.graph.edges(NodeIndex::new(s)).map(|e| self.graph[e.target()])
    }

    pub fn is_ancestor(&self, ancestor: usize, of: usize) -> bool {
        self.ancestors[of][ancestor]
    }

    /// Every edge as (upstream, downstream).
    pub fn edges(&self) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> =
            self.graph.edge_references().map(|e| (self.graph[e.source()], self.graph[e.target()])).collect();
        out.sort();
        out
    }
}

fn dedup_len(v: &[usize]) -> usize {
    let mut v = v.to_vec();
    v.sort();
    v.dedup();
    v.len()
}

/// A concrete cycle inside the first strongly connected component that has one.
fn find_cycle(graph: &DiGraph<usize, ()>) -> Vec<usize> {
    for scc in tarjan_scc(graph) {
        let self_loop = scc.len() == 1 && graph.contains_edge(scc[0], scc[0]);
        if scc.len() < 2 && !self_loop {
            continue;
        }
        let start = *scc.iter().min_by_key(|n| graph[**n]).unwrap_or(&scc[0]);
        // Walk inside the component until we come back to the start: every node of a strongly
        // connected component reaches every other, so a breadth-first search finds the way back.
        let members: std::collections::HashSet<NodeIndex> = scc.iter().copied().collect();
        let mut prev: std::collections::HashMap<NodeIndex, NodeIndex> = Default::default();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut closing = None;
        while let Some(n) = queue.pop_front() {
            for next in graph.neighbors(n) {
                if next == start {
                    closing = Some(n);
                    break;
                }
                if members.contains(&next) && !prev.contains_key(&next) {
                    prev.insert(next, n);
                    queue.push_back(next);
                }
            }
            if closing.is_some() {
                break;
            }
        }
        let mut path = vec![graph[start]];
        let mut at = closing.unwrap_or(start);
        let mut back = Vec::new();
        while at != start {
            back.push(graph[at]);
            at = prev[&at];
        }
        path.extend(back.into_iter().rev());
        path.push(graph[start]);
        return path;
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_stages_after_what_they_need() {
        // 0 <- 2, 1 <- 2, 2 <- 3
        let g = StageGraph::new(&[vec![], vec![], vec![0, 1], vec![2]]).unwrap();
        assert_eq!(g.order(), &[0, 1, 2, 3]);
        assert!(g.is_ancestor(0, 3));
        assert!(!g.is_ancestor(3, 0));
        assert_eq!(g.downstream(2).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn order_follows_needs_not_declaration() {
        let g = StageGraph::new(&[vec![1], vec![]]).unwrap();
        assert_eq!(g.order(), &[1, 0]);
    }

    #[test]
    fn names_the_cycle() {
        // 0 -> 1 -> 2 -> 0, plus a bystander 3
        let cycle = StageGraph::new(&[vec![2], vec![0], vec![1], vec![]]).unwrap_err();
        assert_eq!(cycle, vec![0, 1, 2, 0]);
    }

    #[test]
    fn a_stage_that_needs_itself_is_a_cycle() {
        assert_eq!(StageGraph::new(&[vec![], vec![1]]).unwrap_err(), vec![1, 1]);
    }
}

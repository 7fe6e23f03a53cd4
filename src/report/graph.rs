//! `curate graph`: the stage DAG as text or Graphviz dot.

use std::fmt::Write;

use crate::engine::pipeline::Pipeline;

/// One line a stage, in run order: id, kind, scope, resource, and what it needs.
pub fn text(p: &Pipeline) -> String {
    let mut out = String::new();
    for &s in p.order() {
        let st = &p.stages[s];
        let needs: Vec<&str> = st.needs.iter().map(|&u| &*p.stages[u].id).collect();
        let _ = write!(out, "{} [{}; {}; {}]", st.id, st.kind, st.scope, st.resource);
        if !needs.is_empty() {
            let _ = write!(out, " <- {}", needs.join(", "));
        }
        out.push('\n');
    }
    out
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

pub fn dot(p: &Pipeline) -> String {
    let mut out = format!("digraph {} {{\n  rankdir=LR;\n  node [shape=box];\n", quote(&p.name));
    for &s in p.order() {
        let st = &p.stages[s];
        let label = format!("{}\\n{} ({})", st.id, st.kind, st.scope);
        let _ = writeln!(out, "  {} [label={}];", quote(&st.id), quote(&label).replace("\\\\n", "\\n"));
    }
    for (u, d) in p.graph.edges() {
        let _ = writeln!(out, "  {} -> {};", quote(&p.stages[u].id), quote(&p.stages[d].id));
    }
    out.push_str("}\n");
    out
}

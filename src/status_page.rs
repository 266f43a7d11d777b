//! The status page at `GET /`: server-rendered HTML that refreshes itself,
//! showing this instance, the leader and each queue's message counts. No
//! message bodies, no front-end build step.

use crate::leader::Status;
use crate::queue::Counts;

pub fn render(node_id: &str, status: &Status, queues: &[(String, Counts)]) -> String {
    let leader = match &status.leader {
        Some(leader) => format!(
            "<a href=\"{url}/\">{node}</a> (epoch {epoch})",
            url = escape(&leader.url),
            node = escape(&leader.node_id),
            epoch = leader.epoch
        ),
        None if status.serving => "this instance".to_string(),
        None => "unknown".to_string(),
    };
    let renewed = status
        .since_last_renew
        .map_or("–".to_string(), |d| format!("{} ms ago", d.as_millis()));
    let mut rows = String::new();
    for (name, counts) in queues {
        rows.push_str(&format!(
            "<tr><td class=\"queue\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(name),
            counts.visible,
            counts.in_flight,
            counts.delayed
        ));
    }
    if queues.is_empty() {
        let why = if status.serving {
            "No queues yet."
        } else {
            "This instance holds no queues: only the leader does."
        };
        rows = format!("<tr><td colspan=\"4\">{why}</td></tr>");
    }
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="2">
<title>ssq · {node}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; }}
table {{ border-collapse: collapse; min-width: 32rem; }}
th, td {{ border-bottom: 1px solid #ddd; padding: .35rem .8rem; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
.role {{ display: inline-block; padding: .1rem .5rem; border-radius: .3rem; background: {color}; color: white; }}
dl {{ display: grid; grid-template-columns: max-content auto; gap: .3rem 1rem; }}
dt {{ color: #666; }}
</style>
</head>
<body>
<h1>ssq</h1>
<dl>
<dt>node</dt><dd id="node">{node}</dd>
<dt>role</dt><dd><span class="role" id="role">{role}</span></dd>
<dt>leader</dt><dd id="leader">{leader}</dd>
<dt>last renewal</dt><dd>{renewed}</dd>
</dl>
<h2>Queues</h2>
<table id="queues">
<tr><th>queue</th><th>visible</th><th>in flight</th><th>delayed</th></tr>
{rows}
</table>
<p><small>Refreshes every 2 s. JSON: <a href="/status">/status</a> · metrics: <a href="/metrics">/metrics</a></small></p>
</body>
</html>
"#,
        node = escape(node_id),
        role = status.role.name(),
        color = if status.serving { "#2a7d2a" } else { "#8a8a8a" },
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leader::Role;

    #[test]
    fn shows_role_leader_and_queue_counts_escaped() {
        let status = Status {
            role: Role::MemoryOnly,
            serving: true,
            leader: None,
            since_last_renew: None,
        };
        let counts = Counts {
            visible: 3,
            in_flight: 2,
            delayed: 1,
            oldest_sent_at: None,
        };
        let html = render("node<1>", &status, &[("orders".into(), counts)]);
        assert!(html.contains("node&lt;1&gt;"));
        assert!(html.contains("memory-only"));
        assert!(html.contains("<td class=\"queue\">orders</td><td>3</td><td>2</td><td>1</td>"));
        let passive = Status {
            role: Role::Passive,
            serving: false,
            leader: None,
            since_last_renew: None,
        };
        assert!(render("n", &passive, &[]).contains("only the leader"));
    }
}

//! A log page over real HTTP shows what hooks print without losing hookq's own lines or a long
//! line's end.

use crate::server::{Served, attr_after};
use crate::support::queue::Ws;

/// The text of the log page's `<pre>`, its markup taken out and its entities read back.
fn pre_text(page: &str) -> String {
    let pre = &page[page.find(r#"<pre id="log""#).unwrap()..];
    let pre = &pre[pre.find('>').unwrap() + 1..pre.find("</pre>").unwrap()];
    let mut text = String::new();
    let mut in_tag = false;
    for c in pre.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&#60;", "<")
        .replace("&#62;", ">")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#38;", "&")
}

#[test]
fn an_unterminated_escape_does_not_swallow_hookqs_footer() {
    let ws = Ws::init();
    ws.write_config(
        r#"after_rework = ['printf "\033]0;unterminated title\n"; printf "unterminated escape at end: \033["']"#,
    );
    ws.settle_config();
    ws.task_add("t1", "p1", "todo.ready").ok();
    ws.hookq(&["task", "move", "t1", "review.rework_pending"])
        .ok();
    let ui = Served::start(&ws, &[]);
    let page = ui.get("task/t1/log/after_rework-01.log").ok();
    let text = pre_text(&page);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text:?}");
    assert!(lines[0].starts_with("--- hookq "), "{text:?}");
    assert_eq!(lines[1], "", "an unterminated OSC ends with its line");
    assert_eq!(lines[2], "unterminated escape at end: ");
    assert!(lines[3].starts_with("--- hookq exit 0 after "), "{text:?}");
    // All of it shown: the tail reads on from the file's end.
    let size = std::fs::metadata(ws.log_path("t1", "after_rework", 1))
        .unwrap()
        .len();
    assert_eq!(
        attr_after(&page, r#"<pre id="log""#, "data-offset"),
        size.to_string()
    );
    ui.stop();
}

#[test]
fn a_long_line_shows_its_last_mib() {
    let ws = Ws::init();
    // 2 MB on one line, ending in a few characters of two bytes each.
    ws.write_config(
        r#"after_rework = ['head -c 2000000 /dev/zero | tr "\\000" x; printf "\303\274\303\274 end"']"#,
    );
    ws.settle_config();
    ws.task_add("t1", "p1", "todo.ready").ok();
    ws.hookq(&["task", "move", "t1", "review.rework_pending"])
        .ok();
    let size = std::fs::metadata(ws.log_path("t1", "after_rework", 1))
        .unwrap()
        .len();
    let mib = 1024 * 1024;
    assert!(size > 2 * 1000 * 1000, "{size}");
    let ui = Served::start(&ws, &[]);
    let page = ui.get("task/t1/log/after_rework-01.log").ok();
    assert!(
        page.contains(&format!(
            "the first {} bytes are left out; the last {mib} follow",
            size - mib
        )),
        "{}",
        &page[..page.find(r#"<pre id="log""#).unwrap()]
    );
    let text = pre_text(&page);
    let line = text.lines().next().unwrap();
    assert_eq!(
        line.len(),
        mib as usize - "\n--- hookq exit 0 after  ms\n".len() - ms_len(&text)
    );
    assert!(line.ends_with("xxüü end"), "{}", &line[line.len() - 20..]);
    assert!(line.bytes().take(line.len() - 10).all(|b| b == b'x'));
    assert!(text.ends_with(" ms\n") && text.contains("\n--- hookq exit 0 after "));
    ui.stop();
}

/// How many digits the footer's duration has.
fn ms_len(text: &str) -> usize {
    let footer = &text[text.rfind("--- hookq exit 0 after ").unwrap()..];
    footer
        .trim_start_matches("--- hookq exit 0 after ")
        .trim_end_matches(" ms\n")
        .len()
}

//! How wide the text for people may be: a [`Layout`] carries the [`Style`], the most
//! characters a line may hold (the terminal's width; none for `--wide` and Markdown)
//! and the columns picked with `--columns`. It fits a comfy-table to the width and
//! wraps the sentences under the tables at the same width.

use comfy_table::{ContentArrangement, Table};

use super::columns::Column;
use super::Style;

/// The width used when neither `COLUMNS` nor the terminal says one (a file, a pipe).
pub const DEFAULT_WIDTH_CHARS: usize = 100;

/// The narrowest width honoured: below it a table's frame alone does not fit.
pub const MIN_WIDTH_CHARS: usize = 40;

/// How the tables and sentences are laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Terminal box drawing or Markdown.
    pub style: Style,
    /// Most characters on a line; `None`: no limit (`--wide`, Markdown).
    pub width_chars: Option<usize>,
    /// The result tables' columns, as `--columns` picked them; `None`: the columns a
    /// reader needs to follow the verdict, then as many more as fit.
    pub columns: Option<Vec<Column>>,
}

impl Layout {
    /// Every column, no width limit: Markdown, `--wide`, and the tests of wording.
    pub fn wide(style: Style) -> Layout {
        Layout {
            style,
            width_chars: None,
            columns: None,
        }
    }

    /// Lines of at most `width_chars` (at least [`MIN_WIDTH_CHARS`]); Markdown is
    /// never narrowed (a Markdown table cannot wrap).
    pub fn fitted(style: Style, width_chars: usize, columns: Option<Vec<Column>>) -> Layout {
        Layout {
            style,
            width_chars: (style == Style::Terminal).then_some(width_chars.max(MIN_WIDTH_CHARS)),
            columns,
        }
    }

    /// Caps `table` at the width: comfy-table wraps cells only when the columns
    /// chosen do not fit (a long bucket name, a narrow terminal).
    pub(crate) fn fit_table(&self, table: &mut Table) {
        if let Some(w) = self.width_chars {
            table.set_content_arrangement(ContentArrangement::Dynamic);
            table.set_width(u16::try_from(w).unwrap_or(u16::MAX));
        }
    }

    /// `text` with every line longer than the width broken at spaces; a continued
    /// line keeps the first line's indent plus two spaces. Unchanged without a width.
    pub fn wrap(&self, text: &str) -> String {
        match self.width_chars {
            Some(w) => wrap_text(text, w),
            None => text.to_string(),
        }
    }
}

/// The columns of a table that fit `width`: the `essential` ones, then those of
/// `by_priority` while the table `draw` makes with them is at most `width` wide (up to
/// the first that does not fit, so two tables of one run differ only in how far down
/// the list they got); in `available`'s order.
pub(crate) fn fitting<T: Copy + PartialEq>(
    available: &[T],
    essential: &[T],
    by_priority: &[T],
    width: usize,
    draw: &dyn Fn(&[T]) -> Table,
) -> Vec<T> {
    let in_order = |set: &[T]| -> Vec<T> { available.iter().copied().filter(|c| set.contains(c)).collect() };
    let mut chosen: Vec<T> = essential.to_vec();
    for &c in by_priority.iter().filter(|c| available.contains(c)) {
        chosen.push(c);
        let drawn = draw(&in_order(&chosen));
        if drawn.lines().map(|l| line_chars(&l)).max().unwrap_or(0) > width {
            chosen.pop();
            break;
        }
    }
    in_order(&chosen)
}

/// The width of a line as a terminal shows it (the tables' box drawing is one
/// character each).
pub(crate) fn line_chars(line: &str) -> usize {
    line.chars().count()
}

/// See [`Layout::wrap`].
pub fn wrap_text(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / width.max(1) * 4);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        wrap_line(line, width, &mut out);
    }
    out
}

/// One line of [`wrap_text`], appended to `out` without a final newline.
fn wrap_line(line: &str, width: usize, out: &mut String) {
    if line_chars(line) <= width {
        out.push_str(line);
        return;
    }
    let indent_chars = line.len() - line.trim_start_matches(' ').len();
    // A line indented nearly to the width continues at a small indent instead.
    let next_indent = " ".repeat(if indent_chars + 2 < width / 2 {
        indent_chars + 2
    } else {
        2
    });
    let mut current = line[..indent_chars].to_string();
    let mut current_chars = indent_chars;
    let mut empty = true;
    for word in line[indent_chars..].split(' ').filter(|w| !w.is_empty()) {
        let mut word = word;
        loop {
            let need = line_chars(word) + usize::from(!empty);
            if current_chars + need <= width {
                if !empty {
                    current.push(' ');
                }
                current.push_str(word);
                current_chars += need;
                empty = false;
                break;
            }
            if empty {
                // A word longer than a whole line: cut it.
                let room = width.saturating_sub(current_chars).max(1);
                let cut = word.char_indices().nth(room).map_or(word.len(), |(i, _)| i);
                current.push_str(&word[..cut]);
                word = &word[cut..];
                if word.is_empty() {
                    empty = false;
                    break;
                }
            }
            out.push_str(current.trim_end());
            out.push('\n');
            current = next_indent.clone();
            current_chars = next_indent.len();
            empty = true;
        }
    }
    out.push_str(current.trim_end());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_break_at_spaces_and_keep_their_indent() {
        let text = "  note: one two three four five six seven eight nine ten\nshort\n";
        let wrapped = wrap_text(text, 20);
        for line in wrapped.lines() {
            assert!(line_chars(line) <= 20, "{line:?} in\n{wrapped}");
        }
        assert_eq!(
            wrapped,
            "  note: one two\n    three four five\n    six seven eight\n    nine ten\nshort\n"
        );
        // The words survive in order.
        let words: Vec<&str> = wrapped.split_whitespace().collect();
        assert_eq!(words, text.split_whitespace().collect::<Vec<_>>());
    }

    #[test]
    fn a_word_longer_than_the_line_is_cut_not_overflowed() {
        let wrapped = wrap_text(&format!("x {}", "a".repeat(45)), 20);
        assert!(wrapped.lines().all(|l| line_chars(l) <= 20), "{wrapped}");
        assert_eq!(wrapped.chars().filter(|&c| c == 'a').count(), 45);
    }

    #[test]
    fn markdown_and_wide_are_not_narrowed() {
        assert_eq!(Layout::fitted(Style::Markdown, 80, None).width_chars, None);
        assert_eq!(
            Layout::fitted(Style::Terminal, 10, None).width_chars,
            Some(MIN_WIDTH_CHARS)
        );
        let long = "word ".repeat(60);
        assert_eq!(Layout::wide(Style::Terminal).wrap(&long), long);
    }
}

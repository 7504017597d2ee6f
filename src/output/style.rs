//! Colour on or off, decided once from `--color`, `NO_COLOR` and whether stderr is a terminal.

use std::io::IsTerminal;

use crate::cli::ColorChoice;

#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    pub color: bool,
}

impl Style {
    /// `no_color_env` is whether `NO_COLOR` is set to a non-empty value.
    pub fn new(choice: ColorChoice, no_color_env: bool) -> Style {
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => !no_color_env && std::io::stderr().is_terminal(),
        };
        Style { color }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub fn error(&self, text: &str) -> String {
        self.paint("1;31", text)
    }

    pub fn warning(&self, text: &str) -> String {
        self.paint("1;33", text)
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }
}

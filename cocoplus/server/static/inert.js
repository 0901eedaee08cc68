// Untrusted text made inert, for every page of the server (the page, the decision page): loaded before their
// scripts, it defines `inert(value)`.
"use strict";

// Untrusted text (a worker's question, a steer, a reason, an alias) made inert, by the rule of
// cocoplus/core/inert.py (tests/server/test_browser.py holds the two equal): complete ANSI CSI and
// control strings (OSC, DCS, SOS, PM, APC; 7- or 8-bit) removed; C0 controls but newline and tab as
// their control pictures (␛, ␇), DEL as ␡, C1 as \x85, bidi controls as \u202e, a lone surrogate as
// U+FFFD; CR LF, U+2028 and U+2029 as a newline. The page writes text only as text (textContent, text
// nodes; never parsed as HTML), so this is about what text does once shown: reorder (bidi) or hide.
const INERT = new RegExp(
  "(?:\\x1b\\[|\\x9b)[\\x30-\\x3f]*[\\x20-\\x2f]*[\\x40-\\x7e]" +
  "|(?:\\x1b[\\]PX^_]|[\\x90\\x98\\x9d\\x9e\\x9f])[^\\x07\\x1b\\x90\\x98\\x9c\\x9d\\x9e\\x9f]*(?:\\x07|\\x1b\\\\|\\x9c)" +
  "|\\r\\n|[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069\\u2028\\u2029\\ud800-\\udfff]",
  "gu");
function picture(ch) {
  const o = ch.charCodeAt(0);
  if (o < 0x20) return String.fromCharCode(0x2400 + o);
  if (o === 0x7f) return "\u2421";
  if (o <= 0x9f) return "\\x" + o.toString(16).padStart(2, "0");
  if (o >= 0xd800 && o <= 0xdfff) return "\ufffd";
  return "\\u" + o.toString(16).padStart(4, "0");
}
function inert(value) {
  return String(value).replace(INERT, (m) => (m.length > 1 ? (m === "\r\n" ? "\n" : "") : (m === "\u2028" || m === "\u2029" ? "\n" : picture(m))));
}

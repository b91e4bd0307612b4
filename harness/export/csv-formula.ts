export interface FormulaCell {
  /** 1-based. */
  row: number;
  /** 1-based. */
  column: number;
  cell: string;
}

const FORMULA_START = /^[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/;
// Plain numbers ('-5', '+1.5e3', '-1,234', '-12%') and a lone sign are data, not formulas, in every spreadsheet.
// Written so that no input can make it backtrack more than linearly.
const NUMERIC = /^[+-]?(?:[.,]?\d[\d.,]*(?:[eE][+-]?\d+)?%?)?$/;
const MAX_NUMBER_LENGTH = 64;

/** A1-style column letters (1 → A, 27 → AA). */
export function columnLetters(column: number): string {
  let n = column;
  let out = '';
  while (n > 0) {
    const r = (n - 1) % 26;
    out = String.fromCharCode(65 + r) + out;
    n = Math.floor((n - 1) / 26);
  }
  return out;
}

/**
 * True when a spreadsheet opening the cell would evaluate it: it starts with =, +, -, @ (or their
 * full-width forms), possibly behind tab/CR/LF that some importers strip, and is not a plain number.
 */
export function isFormulaCell(cell: string): boolean {
  const stripped = cell.replace(/^[\t\r\n]+/, '');
  if (!FORMULA_START.test(stripped)) return false;
  return stripped.length > MAX_NUMBER_LENGTH || !NUMERIC.test(stripped);
}

/** Only a cell's head decides whether it is a formula; keeping just that keeps huge cells cheap. */
const KEEP = 128;

/** RFC 4180 cells (quotes, doubled quotes, CRLF/LF/CR rows) checked one by one; lists at most `max` hits. */
export function findFormulaCells(text: string, delimiter: string, max: number): { cells: FormulaCell[]; total: number } {
  const cells: FormulaCell[] = [];
  let total = 0;
  let row = 1;
  let column = 1;
  let cell = '';
  let started = false;
  let quoted = false;
  const take = (ch: string): void => {
    started = true;
    if (cell.length < KEEP) cell += ch;
  };
  const flush = (): void => {
    if (isFormulaCell(cell)) {
      total += 1;
      if (cells.length < max) cells.push({ row, column, cell });
    }
    cell = '';
    started = false;
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] ?? '';
    if (quoted) {
      if (ch !== '"') take(ch);
      else if (text[i + 1] === '"') {
        take('"');
        i += 1;
      } else quoted = false;
    } else if (ch === '"' && !started) {
      quoted = true;
      started = true;
    } else if (ch === delimiter) {
      flush();
      column += 1;
    } else if (ch === '\n' || ch === '\r') {
      flush();
      if (ch === '\r' && text[i + 1] === '\n') i += 1;
      row += 1;
      column = 1;
    } else take(ch);
  }
  if (started || column > 1) flush();
  return { cells, total };
}

// A safe Markdown subset for model text: headings, paragraphs, lists, quotes, tables, code
// blocks (also while a fence still streams in) and inline code, bold, italic, strike and
// http(s)/mailto links. It builds DOM nodes and sets only textContent, so no tag or script in
// model output can reach the page.

import { h } from './dom';

const SAFE_URL = /^(https?:|mailto:)/i;
const INLINE =
  /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|(?<!\w)__([^_]+)__(?!\w)|\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)|~~([^~]+)~~|\[([^\]]+)\]\(([^)\s]+)\)/g;
const ITEM = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
const TABLE_ROW = /^\s*\|.*\|\s*$/;

/** Code spans, **bold**, *italic* / _italic_ (not inside words), ~~strike~~, [link](http...). */
export function inline(text: string): Node[] {
  const out: Node[] = [];
  const pattern = new RegExp(INLINE.source, 'g');
  let last = 0;
  let match: RegExpExecArray | null;
  while ((match = pattern.exec(text)) !== null) {
    if (match.index > last) {
      out.push(document.createTextNode(text.slice(last, match.index)));
    }
    if (match[1]) {
      out.push(h('code', { text: match[2].replace(/^ ([\s\S]*) $/, '$1') }));
    } else if (match[3] || match[4]) {
      out.push(h('strong', {}, inline(match[3] || match[4])));
    } else if (match[5] || match[6]) {
      out.push(h('em', {}, inline(match[5] || match[6])));
    } else if (match[7]) {
      out.push(h('del', {}, inline(match[7])));
    } else if (match[8]) {
      const url = match[9];
      out.push(
        SAFE_URL.test(url)
          ? h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, inline(match[8]))
          : document.createTextNode(match[0])
      );
    }
    last = pattern.lastIndex;
  }
  if (last < text.length) {
    out.push(document.createTextNode(text.slice(last)));
  }
  return out;
}

function splitRow(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map(cell => cell.trim());
}

/** The Markdown as a `div.blitz-md`. */
export function renderMarkdown(source: string | null | undefined): HTMLDivElement {
  const root = h('div', { class: 'blitz-md' });
  const lines = String(source || '')
    .replace(/\r\n?/g, '\n')
    .split('\n');
  let i = 0;
  let paragraph: string[] = [];
  const flush = (): void => {
    if (paragraph.length) {
      root.append(h('p', {}, inline(paragraph.join(' '))));
    }
    paragraph = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      flush();
      const body: string[] = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) {
        body.push(lines[i++]);
      }
      i += 1; // the closing fence (absent while a block still streams in)
      root.append(
        h('pre', { class: 'blitz-code', 'data-lang': fence[2] || null }, h('code', { text: body.join('\n') }))
      );
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      flush();
      const level = Math.min(6, heading[1].length + 2);
      root.append(h(`h${level}` as 'h3', {}, inline(heading[2])));
      i += 1;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      root.append(h('hr'));
      i += 1;
      continue;
    }
    if (TABLE_ROW.test(line) && i + 1 < lines.length && /^\s*\|?[\s:-]+\|[\s|:-]*$/.test(lines[i + 1])) {
      flush();
      const head = splitRow(line);
      const rows: string[][] = [];
      i += 2;
      while (i < lines.length && TABLE_ROW.test(lines[i])) {
        rows.push(splitRow(lines[i++]));
      }
      root.append(
        h(
          'table',
          {},
          h('thead', {}, h('tr', {}, head.map(cell => h('th', {}, inline(cell))))),
          h(
            'tbody',
            {},
            rows.map(row => h('tr', {}, row.map(cell => h('td', {}, inline(cell)))))
          )
        )
      );
      continue;
    }
    const item = line.match(ITEM);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1]);
      const list = h(ordered ? 'ol' : 'ul');
      while (i < lines.length) {
        const next = lines[i].match(ITEM);
        if (next) {
          list.append(h('li', {}, inline(next[2])));
        } else if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) {
          (list.lastChild as HTMLLIElement).append(' ', ...inline(lines[i].trim()));
        } else {
          break;
        }
        i += 1;
      }
      root.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const quoted: string[] = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) {
        quoted.push(lines[i++].replace(/^\s*>\s?/, ''));
      }
      root.append(h('blockquote', {}, renderMarkdown(quoted.join('\n'))));
      continue;
    }
    if (line.trim() === '') {
      flush();
    } else {
      paragraph.push(line.trim());
    }
    i += 1;
  }
  flush();
  return root;
}

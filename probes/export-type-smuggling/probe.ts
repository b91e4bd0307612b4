import { exportProbe } from '../_shared/export-attack.js';

export const exportTypeSmuggling = exportProbe(
  'export-type-smuggling',
  'an executable named .csv, CSV formula injection, an .xlsx with a macro, an SVG with script',
  'type-smuggling',
  ['report.csv', 'data.csv', 'book.xlsx', 'chart.svg'],
  'smuggled types and active content',
);

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { allSettings, type Setting } from '../src/settings.js';

/**
 * Writes the table of every setting (src/settings.ts) into docs/operations.md, between the markers:
 * `npm run docs:settings`. test/unit/settings.test.ts fails while the table there differs from this one.
 */
export const operationsGuide = fileURLToPath(new URL('../docs/operations.md', import.meta.url));
export const beginMarker = '<!-- settings:begin -->';
export const endMarker = '<!-- settings:end -->';

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
const defaultCell = (setting: Setting) =>
  setting.defaultShown ?? (setting.default === null ? 'none' : `\`${setting.default}\``);

/** The table as Markdown, formatted as prettier formats docs/ (so that `npm run lint` accepts it). */
export const settingsTable = async (): Promise<string> => {
  const rows = allSettings.map(
    (setting) =>
      `| \`${setting.name}\` | ${cell(defaultCell(setting))} | ${setting.requiredInProduction ? 'required' : ''} | ${cell(`${setting.description} — ${setting.expected}`)} |`,
  );
  const markdown = [
    '| setting | default | production | description — value |',
    '| - | - | - | - |',
    ...rows,
  ].join('\n');
  const options = (await resolveConfig(operationsGuide)) ?? {};
  return (await format(markdown, { ...options, parser: 'markdown' })).trimEnd();
};

/** The document with the table between its markers replaced by `table`. */
export const withSettingsTable = (document: string, table: string): string => {
  const begin = document.indexOf(beginMarker);
  const end = document.indexOf(endMarker);
  if (begin < 0 || end < begin) throw new Error(`${beginMarker} … ${endMarker} not found in the document`);
  return `${document.slice(0, begin + beginMarker.length)}\n\n${table}\n\n${document.slice(end)}`;
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const document = readFileSync(operationsGuide, 'utf8');
  const updated = withSettingsTable(document, await settingsTable());
  if (updated !== document) writeFileSync(operationsGuide, updated);
  console.log(
    `${operationsGuide}: ${updated === document ? 'up to date' : 'table written'} (${allSettings.length} settings)`,
  );
}

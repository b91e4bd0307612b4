/**
 * Keeps junit-report-builder's output valid against the Jenkins xUnit `junit-10.xsd`, the schema CI readers
 * follow: that schema has no `<properties>` and no `file` inside a `<testcase>` (the cards add neither), no
 * `skipped` on `<testsuites>`, and a `message` on `<skipped>` that the builder cannot write. These steps hook
 * the built element or the built text (the builder has no other extension point) and leave the data where the
 * schema allows it.
 */
import type { XMLElement } from 'xmlbuilder';

/** The part of junit-report-builder's testcase these steps touch. */
export interface BuildableCase {
  skipped(): unknown;
  build(parent: XMLElement): XMLElement;
}

function afterBuild(c: BuildableCase, step: (element: XMLElement) => void): void {
  const build = c.build.bind(c);
  c.build = (parent: XMLElement): XMLElement => {
    const element = build(parent);
    step(element);
    return element;
  };
}

const childrenNamed = (element: XMLElement, name: string): XMLElement[] =>
  element.children.filter((child): child is XMLElement => (child as XMLElement).name === name);

/** `<skipped message="…">`: the reason where every reader shows it. */
export function skipWithMessage(c: BuildableCase, message: string): void {
  c.skipped();
  afterBuild(c, (element) => {
    for (const skipped of childrenNamed(element, 'skipped')) skipped.att('message', message);
  });
}

/**
 * junit-10.xsd has no `skipped` count on `<testsuites>` (each `<testsuite>` keeps its own; xmllint refuses the
 * file with it), and the builder writes no `time` there, which the schema allows: the root gets the suites'
 * total time in seconds instead of a skipped count.
 */
export function conformRoot(xml: string, timeSeconds: number): string {
  const time = Number.isFinite(timeSeconds) && timeSeconds >= 0 ? Math.round(timeSeconds * 1000) / 1000 : 0;
  return xml.replace(/(<testsuites\b[^>]*?) skipped="\d+"/, '$1').replace(/(<testsuites\b[^>]*?)(\/?>)/, `$1 time="${time}"$2`);
}

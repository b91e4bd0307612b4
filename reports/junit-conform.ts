/**
 * Keeps junit-report-builder's output valid against the Jenkins xUnit `junit-10.xsd`, the schema CI readers
 * follow: that schema has no `<properties>` and no `file` inside a `<testcase>`, no `skipped` on
 * `<testsuites>`, and a `message` on `<skipped>` that the builder cannot write. These steps hook the built
 * element (the builder has no other extension point) and leave the data where the schema allows it.
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
 * Moves a testcase's `<properties>` into its testsuite's, each name prefixed with `<prefix>.` (the probe id),
 * since junit-10.xsd allows properties only on a testsuite.
 */
export function hoistCaseProperties(c: BuildableCase, prefix: string): void {
  afterBuild(c, (element) => {
    const suite = element.parent;
    const target = childrenNamed(suite, 'properties')[0] ?? suite.ele('properties');
    for (const properties of childrenNamed(element, 'properties')) {
      for (const property of childrenNamed(properties, 'property')) {
        // xmlbuilder's typings describe attribs wrongly ({ string: XMLAttribute }).
        const attribs = property.attribs as unknown as Record<string, { value: unknown } | undefined>;
        const name = String(attribs['name']?.value ?? '');
        const value = String(attribs['value']?.value ?? '');
        target.ele('property', { name: `${prefix}.${name}`, value });
      }
      properties.remove();
    }
  });
}

/** junit-10.xsd has no `skipped` count on `<testsuites>` (each `<testsuite>` keeps its own). */
export function dropRootSkippedCount(xml: string): string {
  return xml.replace(/(<testsuites\b[^>]*?) skipped="\d+"/, '$1');
}

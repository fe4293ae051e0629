/**
 * The check the server makes of SAML IdP metadata: well-formed XML whose single root element is an
 * `EntityDescriptor` (with any namespace prefix) that has an `IDPSSODescriptor` child. Entities are not expanded
 * and nothing is fetched, so hostile XML costs one linear pass.
 */
import { XMLParser, XMLValidator } from "fast-xml-parser";

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  processEntities: false,
  preserveOrder: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  commentPropName: "#comment",
});

type Node = Record<string, unknown>;

/** The element name of a preserveOrder node, or undefined for text and comments. */
function elementName(node: Node): string | undefined {
  for (const key of Object.keys(node)) {
    if (key !== "#text" && key !== "#comment" && key !== ":@") return key;
  }
  return undefined;
}

/**
 * Returns undefined when `xml` is acceptable IdP metadata, else one sentence saying what is wrong.
 */
export function checkIdpMetadata(xml: string): string | undefined {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    return `is not well-formed XML: ${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col})`;
  }
  let nodes: Node[];
  try {
    nodes = parser.parse(xml) as Node[];
  } catch (err) {
    return `is not well-formed XML: ${(err as Error).message}`;
  }
  const roots = nodes.map(elementName).filter((n): n is string => n !== undefined);
  if (roots.length !== 1) return `must have exactly one root element, found ${roots.length}`;
  const rootName = roots[0] as string;
  if (rootName !== "EntityDescriptor") {
    return `has root element ${rootName}; expected an EntityDescriptor (the IdP's SAML 2.0 metadata)`;
  }
  const root = nodes.find((n) => elementName(n) === rootName) as Node;
  const children = root[rootName] as Node[];
  if (!children.some((c) => elementName(c) === "IDPSSODescriptor")) {
    return "has an EntityDescriptor without an IDPSSODescriptor: this is not the metadata of an identity provider";
  }
  return undefined;
}

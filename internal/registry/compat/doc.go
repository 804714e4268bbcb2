// Package compat decides whether a new schema version may follow the
// earlier versions of a subject under a compatibility level, and lists
// every violation with its path, for the schema registry's Confluent
// compatible /compatibility API and for the CLI's repository check.
//
// # Levels
//
// The levels are Confluent Schema Registry's. BACKWARD: readers of the new
// schema can read data written with the old one, [CanRead](new, old).
// FORWARD: readers of the old schema can read data written with the new
// one, [CanRead](old, new). FULL: both. A plain level compares the new
// schema with the latest existing version only; a _TRANSITIVE level with
// every existing version. NONE checks nothing.
//
// Every violation has a path into the new schema and a message that says
// what changed (from old to new) and which readers break, such as
//
//	/properties/count/type: property "count" changed type from integer to string: readers of the new schema reject old data
//
// # Avro
//
// Avro schemas, parsed with github.com/twmb/avro, follow the
// specification's schema resolution rules as Java's SchemaCompatibility
// (and so Confluent) applies them. Paths are field paths:
// "/fields/address/fields/zip", "/fields/tags/items",
// "/fields/labels/values", "" for the root; union branches share the
// union's path.
//
//   - A field the reader has and the writer lacks needs a default in the
//     reader: adding a field with a default is compatible both ways, adding
//     one without a default breaks BACKWARD, removing one that has no
//     default breaks FORWARD. A union starting with "null" needs
//     "default": null too: Java readers give it no implicit default.
//   - A field the writer has and the reader lacks is skipped: removing a
//     field is BACKWARD compatible.
//   - Types may be promoted from writer to reader: int → long → float →
//     double, and string ↔ bytes. int → long is BACKWARD compatible;
//     long → int is not.
//   - Every writer enum symbol must be a reader symbol, unless the reader
//     enum has a default: adding a symbol breaks FORWARD, removing one
//     breaks BACKWARD.
//   - Every branch of a writer union must match a branch of the reader
//     (same kind and name, then unqualified name, then promotion); a
//     non-union writer must match a reader branch. ["null", "string"] →
//     ["null", "string", "long"] breaks FORWARD; the reverse breaks
//     BACKWARD; "int" → ["null", "int"] breaks FORWARD.
//   - Records, enums and fixed types match by unqualified name or by a
//     reader alias; fields match by name or by a reader field alias. A
//     field renamed from "count" to "total" with "aliases": ["count"] is
//     BACKWARD compatible (not FORWARD: old readers do not know the alias);
//     renamed without the alias it is not, unless "total" has a default.
//     Two writer fields may not match one reader field.
//   - Fixed sizes and decimal precision and scale must be equal. Arrays,
//     maps and nested (also recursive) records are compared recursively.
//
// twmb/avro's CheckCompatibility stops at the first problem, so the
// package walks the two schema trees to list every violation. The walk
// agrees with the library on every tested pair (random ones included)
// except for the implicit null default, which the library grants; if the
// library ever finds a problem the walk does not, its error is reported as
// the violation.
//
// # JSON Schema
//
// Both documents are first normalised with schema.Normalize: draft 3 is
// rewritten to draft 2020-12 (per-property "required": true becomes the
// parent's "required" list, so the two spellings are compatible), and an
// object root that says nothing about additional properties is closed
// ("additionalProperties": false). The reader can read the writer's data
// when every instance valid under the writer schema is valid under the
// reader schema. The check is conservative: it looks at one keyword at a
// time and reports every reader constraint that the writer's keywords do
// not imply, so a "compatible" verdict is always right, while a violation
// may be a change the rules cannot prove safe. Constraints only the writer
// has never matter. Paths are JSON pointers into the normalised new document.
// The rules, recursively into properties, additionalProperties, items and
// prefixItems, and through local "$ref"s:
//
//  1. A property the reader declares and the writer does not is fine if
//     the writer is closed ("additionalProperties": false): the writer
//     never produced it. If the writer is open, old data may hold the
//     property with any value, so the reader's schema for it must accept
//     anything. Adding {"tag": {"type": "string"}} to a closed root is
//     BACKWARD compatible; to a nested object without
//     "additionalProperties": false it is not ({"tag": {}} is).
//  2. A property the writer declares and the reader does not is fine if
//     the reader is open, and breaks if the reader is closed: removing
//     "count" from a closed root breaks BACKWARD; adding a property to a
//     closed schema breaks FORWARD for the same reason. Closing an open
//     object breaks BACKWARD.
//  3. The reader may not require a property the writer does not require:
//     "required": ["name"] → ["name", "count"] breaks BACKWARD; shrinking
//     the list breaks FORWARD.
//  4. Types may not narrow: the reader's "type" must include each writer
//     type, where integer is included in number, and no "type" means any
//     type. integer → number is BACKWARD compatible; number → integer and
//     string → integer are not. Adding "null" to a type list is BACKWARD
//     compatible.
//  5. Enums may only grow in the reader: ["click", "view"] → ["click"]
//     breaks BACKWARD, → ["click", "view", "scroll"] breaks FORWARD, and
//     an "enum" added to a property that had none breaks BACKWARD.
//  6. Bounds may not tighten in the reader: minimum, exclusiveMinimum,
//     maximum, exclusiveMaximum, minLength, maxLength, minProperties,
//     maxProperties and multipleOf (the writer's must be a multiple of the
//     reader's). "minimum": 0 → 10 breaks BACKWARD, "maximum": 100 → 1000
//     breaks FORWARD. A "pattern" added or changed in the reader breaks,
//     even if the new pattern is looser: "^[a-z]+$" → "^[a-z0-9]+$" breaks
//     both ways.
//  7. Arrays: item schemas follow these rules, position by position for
//     prefixItems (and draft 4–7 tuple "items"): "items": {"type":
//     "integer"} → {"type": "number"} is BACKWARD compatible. minItems and
//     maxItems are bounds as in rule 6, and "uniqueItems": true may not be
//     added.
//  8. A "const" or "format" added or changed in the reader breaks:
//     "format": "date-time" added breaks BACKWARD. The keywords the rules
//     do not compare (allOf, anyOf, oneOf, not, if/then/else,
//     dependentSchemas, dependentRequired, patternProperties,
//     propertyNames, contains, unevaluatedItems, $dynamicRef, a $ref that
//     does not resolve inside the document) must be unchanged in the
//     reader, or the violation says "cannot prove compatibility of allOf in
//     the root schema; use NONE or keep it unchanged". An object with
//     "unevaluatedProperties": false next to allOf (the normalised form of
//     a root that combines subschemas) counts as open for rule 1.
//
// Identical subtrees are always compatible, provided the local "$ref"s in
// them resolve to identical subtrees too. A local "$ref" ("#/$defs/amount")
// is followed, also into recursive definitions, and a violation inside a
// definition is reported once, at the definition
// ("/$defs/amount/type"). Check does not compile the documents against
// their metaschema; the registry does that before it registers a schema.
package compat

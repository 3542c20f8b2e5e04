import type { z } from "zod";
import { ignoreOverride, zodToJsonSchema } from "zod-to-json-schema";
import { agentHeader, tenantHeader, userHeader } from "./request-scope.ts";
import type { ResponseDoc, RouteDoc } from "./route.ts";
import { componentSchemas } from "./schemas.ts";

type JsonSchema = Record<string, unknown>;

const componentPath = ["#", "components"];
const componentKey = "schemas";
const componentNames = new Map<z.ZodTypeAny, string>(
  Object.entries(componentSchemas).map(([name, schema]) => [schema, name]),
);
const componentDefs = new Map<unknown, string>(
  Object.entries(componentSchemas).map(([name, schema]) => [schema._def, name]),
);

/**
 * Named components become `$ref`s; any other schema that appears twice is written out again rather
 * than referred to by a JSON pointer into another schema (`#/components/schemas/X/properties/y`),
 * which generated clients turn into lookups through optional fields.
 */
const conversion = {
  target: "jsonSchema2019-09",
  $refStrategy: "none",
  definitions: componentSchemas,
  basePath: componentPath,
  definitionPath: componentKey,
  override: (def: unknown, _refs: unknown, _seen: unknown, forceResolution?: boolean) => {
    const name = componentDefs.get(def);
    return name && !forceResolution ? { $ref: `#/components/schemas/${name}` } : ignoreOverride;
  },
} as const;

/**
 * JSON Schema 2020-12 compatible (what OpenAPI 3.1 uses). A named component is referred to as
 * `#/components/schemas/<Name>`, wherever it appears, at the top or nested.
 */
function jsonSchema(schema: z.ZodTypeAny): JsonSchema {
  const name = componentNames.get(schema);
  if (name) return { $ref: `#/components/schemas/${name}` };
  const {
    $schema: _ignored,
    [componentKey]: _definitions,
    ...rest
  } = zodToJsonSchema(schema, conversion) as JsonSchema;
  return rest;
}

/** All named schemas, converted together so that they refer to one another by name. */
function components(): Record<string, JsonSchema> {
  const document = zodToJsonSchema(componentSchemas.Health as z.ZodTypeAny, conversion) as JsonSchema;
  return document[componentKey] as Record<string, JsonSchema>;
}

const scopeHeaders = [
  {
    name: userHeader,
    in: "header",
    required: false,
    description: "The user, when the API key is not bound to one (then required). Must match a bound key's user.",
    schema: { type: "string" },
  },
  {
    name: agentHeader,
    in: "header",
    required: false,
    description: "Optional agent of the scope",
    schema: { type: "string" },
  },
  {
    name: tenantHeader,
    in: "header",
    required: false,
    description: "Only with --no-auth: the tenant (default `default`). With keys the tenant comes from the key.",
    schema: { type: "string" },
  },
];

function parametersOf(route: RouteDoc): JsonSchema[] {
  const parameters: JsonSchema[] = [];
  for (const [location, schema] of [
    ["path", route.params],
    ["query", route.query],
  ] as const) {
    if (!schema) continue;
    for (const [name, field] of Object.entries(schema.shape as Record<string, z.ZodTypeAny>)) {
      parameters.push({
        name,
        in: location,
        required: location === "path" || !field.isOptional(),
        ...(field.description ? { description: field.description } : {}),
        schema: jsonSchema(field),
      });
    }
  }
  if (route.scoped === "tenant")
    return [...parameters, ...scopeHeaders.filter((header) => header.name === tenantHeader)];
  return route.scoped ? [...parameters, ...scopeHeaders] : parameters;
}

function responseOf(response: ResponseDoc): JsonSchema {
  const headers = response.headers
    ? {
        headers: Object.fromEntries(
          Object.entries(response.headers).map(([name, description]) => [
            name,
            { description, schema: { type: "string" } },
          ]),
        ),
      }
    : {};
  if (response.contentType) {
    return {
      description: response.description,
      ...headers,
      content: { [response.contentType]: { schema: { type: "string", contentMediaType: response.contentType } } },
    };
  }
  if (!response.schema) return { description: response.description, ...headers };
  return {
    description: response.description,
    ...headers,
    content: { "application/json": { schema: jsonSchema(response.schema) } },
  };
}

function operationOf(route: RouteDoc): JsonSchema {
  const operation: JsonSchema = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    parameters: parametersOf(route),
    responses: Object.fromEntries(Object.entries(route.responses).map(([status, doc]) => [status, responseOf(doc)])),
    security: route.scoped ? [{ apiKey: [] }] : [],
  };
  if (route.body) {
    const content: JsonSchema = { "application/json": { schema: jsonSchema(route.body) } };
    if (route.multipart) {
      content["multipart/form-data"] = {
        schema: {
          ...jsonSchema(route.multipart),
          additionalProperties: { type: "string", contentMediaType: "image/*" },
        },
      };
    }
    operation.requestBody = { required: true, content };
  }
  return operation;
}

export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

const tags = [
  { name: "service", description: "Health, counts, the audit trail and this document" },
  { name: "sessions", description: "Write sessions, list them, forget them" },
  { name: "search", description: "Budgeted evidence packs" },
  { name: "evidence", description: "Raw nodes and original images" },
  { name: "entries", description: "The maintained active index" },
  { name: "video", description: "Watched video: entities, episodic levels, key frames" },
  { name: "mcp", description: "The Model Context Protocol over streamable HTTP" },
];

/**
 * The OpenAPI 3.1 document, built from the very schemas the routes validate with. `servers` is
 * filled per request with the origin the document was fetched from (see the app).
 */
export function buildOpenApi(routes: readonly RouteDoc[], info: { version: string }): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method] = operationOf(route);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Cairn",
      version: info.version,
      description:
        "Long-term multimodal memory. Every request acts in the scope of its API key (tenant, optionally user); " +
        "ids of other tenants answer 404. Only loopback Host names (or those the server allows) are served, and a " +
        "browser Origin must be the same host or allowed: anything else is 403. Errors are { error: { code, message, field? } }.",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: "http://127.0.0.1:7700", description: "cairn serve's default address" }],
    tags,
    components: {
      schemas: components(),
      securitySchemes: { apiKey: { type: "http", scheme: "bearer", description: "created with `cairn keys create`" } },
    },
    paths,
  };
}

import type { z } from "zod";
import { zodToJsonSchema } from "zod-to-json-schema";
import { agentHeader, tenantHeader, userHeader } from "./request-scope.ts";
import type { ResponseDoc, RouteDoc } from "./route.ts";

type JsonSchema = Record<string, unknown>;

/** JSON Schema 2020-12 compatible (what OpenAPI 3.1 uses), inlined: no $refs to resolve. */
function jsonSchema(schema: z.ZodTypeAny): JsonSchema {
  const { $schema: _ignored, ...rest } = zodToJsonSchema(schema, { $refStrategy: "none", target: "jsonSchema2019-09" });
  return rest;
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
        schema: jsonSchema(field),
      });
    }
  }
  return route.scoped ? [...parameters, ...scopeHeaders] : parameters;
}

function responseOf(response: ResponseDoc): JsonSchema {
  if (response.contentType) {
    return {
      description: response.description,
      content: { [response.contentType]: { schema: { type: "string", contentMediaType: response.contentType } } },
    };
  }
  if (!response.schema) return { description: response.description };
  return {
    description: response.description,
    content: { "application/json": { schema: jsonSchema(response.schema) } },
  };
}

function operationOf(route: RouteDoc): JsonSchema {
  const operation: JsonSchema = {
    operationId: `${route.method}${route.path.replace(/[^A-Za-z0-9]+(.)?/g, (_, next = "") => next.toUpperCase())}`,
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

/** The OpenAPI 3.1 document, built from the very schemas the routes validate with. */
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
        "ids of other tenants answer 404. Errors are { error: { code, message, field? } }.",
    },
    components: {
      securitySchemes: { apiKey: { type: "http", scheme: "bearer", description: "created with `cairn keys create`" } },
    },
    paths,
  };
}

// streamText through the Vercel AI SDK (`@ai-sdk/openai` `.responses()`) against the gateway:
// a tool round trip streamed over two steps. Prints one JSON object: the text deltas, the
// final text, the stream's part types, the finish reason, and the body of every request.
import { stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { gatewayProvider } from './gateway_provider.mjs';

const { openai, sent } = gatewayProvider();
const tools = {
  get_weather: tool({
    description: 'The weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => `18C in ${city}`,
  }),
};

const result = streamText({
  model: openai.responses('fake-tool-caller'),
  prompt: 'call get_weather {"city":"Paris"}',
  tools,
  stopWhen: stepCountIs(3),
  onError: ({ error }) => { console.error(error); process.exit(1); },
});
const parts = [];
const deltas = [];
for await (const part of result.fullStream) {
  parts.push(part.type);
  if (part.type === 'text-delta') deltas.push(part.text);
  if (part.type === 'error') throw part.error;
}
console.log(JSON.stringify({
  deltas, parts, text: await result.text, finishReason: await result.finishReason,
  toolResults: (await result.steps).map((step) => step.toolResults.map((r) => r.output)),
  sent,
}));

// A 3-turn chat through the Vercel AI SDK (`@ai-sdk/openai` `.responses()`, its default
// store: true) against the gateway: a tool round trip, then two more user turns. Prints
// one JSON object: each turn's text, and the body of every request the SDK sent and of
// every response it received.
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { gatewayProvider } from './gateway_provider.mjs';

const { openai, sent, received } = gatewayProvider();
const tools = {
  get_weather: tool({
    description: 'The weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => `18C in ${city}`,
  }),
};

const messages = [];
const texts = [];
for (const prompt of ['call get_weather {"city":"Paris"}', 'Thanks!', 'And tomorrow?']) {
  messages.push({ role: 'user', content: prompt });
  const result = await generateText({
    model: openai.responses('fake-tool-caller'), messages, tools, stopWhen: stepCountIs(3),
  });
  texts.push(result.text);
  messages.push(...result.response.messages);
}
console.log(JSON.stringify({ texts, sent, received }));

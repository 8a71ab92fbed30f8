export default function Home() {
  return <main>Q-RAG Studio</main>;
}

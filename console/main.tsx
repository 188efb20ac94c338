import { render } from "preact";
import { App } from "./app.tsx";
import "./styles.css";
import "./status.css";

render(<App />, document.getElementById("app") as HTMLElement);
